package wire

import (
	"testing"

	sdk "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStreamSameIndexNewID feeds the chunks Ollama sends for a parallel
// batch: every call at index 0, told apart by its id.
func TestStreamSameIndexNewID(t *testing.T) {
	a := newStreamAcc()
	zero := 0
	frag := func(id, name, args string) sdk.ChatCompletionStreamResponse {
		return sdk.ChatCompletionStreamResponse{Choices: []sdk.ChatCompletionStreamChoice{{Delta: sdk.ChatCompletionStreamChoiceDelta{
			ToolCalls: []sdk.ToolCall{{Index: &zero, ID: id, Function: sdk.FunctionCall{Name: name, Arguments: args}}},
		}}}}
	}
	for _, ch := range []sdk.ChatCompletionStreamResponse{
		frag("a", "get", `{"x":`), frag("", "", `1}`),
		frag("b", "put", `{"y":2}`),
		frag("c", "get", `{"x":3}`),
	} {
		a.add(&ch, nil)
	}
	got := a.reply().Message.ToolCalls
	want := []struct{ id, name, args string }{{"a", "get", `{"x":1}`}, {"b", "put", `{"y":2}`}, {"c", "get", `{"x":3}`}}
	require.Len(t, got, len(want), "%d calls, want %d: %+v", len(got), len(want), got)
	for i, w := range want {
		assert.Equal(t, w.id, got[i].ID, "call %d: ID", i)
		assert.Equal(t, w.name, got[i].Name, "call %d: Name", i)
		assert.Equal(t, w.args, string(got[i].Arguments), "call %d: Arguments", i)
	}
}
