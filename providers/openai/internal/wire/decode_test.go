package wire

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
)

// FuzzToolArguments checks that any text a model produces as arguments is
// stored as valid JSON and sent back unchanged.
func FuzzToolArguments(f *testing.F) {
	for _, s := range []string{"", "{}", `{"a":1}`, `{"broken`, `"str"`, " [1, 2] ", "null", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		raw := ToolArguments(s)
		require.True(t, json.Valid(raw), "ToolArguments(%q) = %q, not valid JSON", s, raw)
		back := argumentsText(raw)
		t2 := strings.TrimSpace(s)
		switch {
		case t2 == "" || t2 == "null":
			assert.Equal(t, "{}", back, "empty arguments %q sent back as %q, want {}", s, back)
		case json.Valid([]byte(t2)):
			if t2[0] != '"' {
				assert.Equal(t, t2, back, "valid JSON %q sent back as %q", s, back)
			}
		default:
			var want string // s itself, with invalid UTF-8 replaced
			err := json.Unmarshal(raw, &want)
			assert.NoError(t, err, "invalid JSON %q: ToolArguments = %q, not a JSON string", s, raw)
			assert.Equal(t, want, back, "invalid JSON %q sent back as %q, want %q", s, back, want)
		}
	})
}

// TestStreamAccToolCallsWithoutIndex assembles tool calls from servers that
// omit the index: fragments go to the call with the same id, or to the last
// call when they carry no id.
func TestStreamAccToolCallsWithoutIndex(t *testing.T) {
	chunk := func(tcs ...sdk.ToolCall) *sdk.ChatCompletionStreamResponse {
		return &sdk.ChatCompletionStreamResponse{Choices: []sdk.ChatCompletionStreamChoice{{Delta: sdk.ChatCompletionStreamChoiceDelta{ToolCalls: tcs}}}}
	}
	fn := func(id, name, args string) sdk.ToolCall {
		return sdk.ToolCall{ID: id, Function: sdk.FunctionCall{Name: name, Arguments: args}}
	}
	acc := newStreamAcc()
	acc.add(chunk(fn("a", "f", `{"x"`)), nil)
	acc.add(chunk(fn("", "", `:1}`)), nil)
	acc.add(chunk(fn("b", "g", `{}`)), nil)
	acc.add(chunk(fn("a", "", ``)), nil)
	done := &sdk.ChatCompletionStreamResponse{Choices: []sdk.ChatCompletionStreamChoice{{FinishReason: sdk.FinishReasonStop}}}
	acc.add(done, nil)
	// A second choice is ignored.
	acc.add(&sdk.ChatCompletionStreamResponse{Choices: []sdk.ChatCompletionStreamChoice{{Index: 1, Delta: sdk.ChatCompletionStreamChoiceDelta{Content: "other"}}}}, nil)
	want := &llm.Reply{
		Message: defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{
			{ID: "a", Name: "f", Arguments: json.RawMessage(`{"x":1}`)},
			{ID: "b", Name: "g", Arguments: json.RawMessage(`{}`)},
		}},
		FinishReason: llm.FinishStop,
	}
	assert.Empty(t, cmp.Diff(want, acc.reply()), "reply mismatch (-want +got)")
}
