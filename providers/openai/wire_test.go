package openai

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/providers/openai/internal/wire"
)

// goOpenAIBody is the body go-openai itself encodes for req, with what the
// adapter adds to it (empty contents, explicit zero temperature): the
// reference the assembled bodies are checked against.
func goOpenAIBody(t *testing.T, m *Model, req *llm.Request, stream bool) []byte {
	t.Helper()
	out, patch := m.wire.RequestFields(req.Tools, req.Output, stream)
	var empty []int
	if req.System != "" {
		out.Messages = append(out.Messages, sdk.ChatCompletionMessage{Role: sdk.ChatMessageRoleSystem, Content: req.System})
	}
	for _, msg := range req.Messages {
		om, err := m.wire.Message(msg)
		require.NoError(t, err)
		if om.Content == "" && (om.Role != sdk.ChatMessageRoleAssistant || len(om.ToolCalls) == 0) {
			empty = append(empty, len(out.Messages))
		}
		out.Messages = append(out.Messages, om)
	}
	b, err := json.Marshal(out)
	require.NoError(t, err)
	if patch.Len() == 0 && len(empty) == 0 {
		return b
	}
	var obj map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &obj))
	require.NoError(t, patch.Apply(obj))
	var msgs []map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(obj["messages"], &msgs))
	for _, i := range empty {
		msgs[i]["content"] = json.RawMessage(`""`)
	}
	obj["messages"], err = json.Marshal(msgs)
	require.NoError(t, err)
	b, err = json.Marshal(obj)
	require.NoError(t, err)
	return b
}

// assembled is the body the adapter sends for req.
func assembled(t *testing.T, m *Model, req *llm.Request, stream bool) []byte {
	t.Helper()
	b, err := m.body(req, stream)
	require.NoError(t, err)
	return b
}

// requireSameJSON fails unless a and b are the same JSON value.
func requireSameJSON(t *testing.T, want, got []byte) {
	t.Helper()
	var w, g any
	require.NoError(t, json.Unmarshal(want, &w), "%s", want)
	require.NoError(t, json.Unmarshal(got, &g), "%s", got)
	require.Empty(t, cmp.Diff(w, g), "request body mismatch (-want +got)")
}

// TestWireBodyMatchesGoOpenAI checks the assembled body against go-openai's
// own encoding of the same request: byte for byte when the adapter adds
// nothing to go-openai's body, as the same JSON otherwise; and against the
// OpenAPI spec.
func TestWireBodyMatchesGoOpenAI(t *testing.T) {
	route := chatRoute(t)
	tests := []struct {
		name      string
		cfg       Config
		req       llm.Request
		identical bool
	}{
		{"conversation with tools", Config{Model: "gpt-4.1"}, llm.Request{System: "Be <helpful> & brief.", Messages: conversation(), Tools: []llm.ToolSpec{weatherTool}}, false},
		{"no empty content", Config{Model: "gpt-4.1", MaxTokens: 10, Stop: []string{"x"}}, llm.Request{System: "sys", Messages: conversation()[:3], Tools: []llm.ToolSpec{weatherTool}}, true},
		{"no system, no tools", Config{}, llm.Request{Messages: []defs.Message{defs.UserMessage("hi \u2028 \"there\"")}}, true},
		{"system only", Config{}, llm.Request{System: "only"}, true},
		{"zero temperature, replayed reasoning", Config{Temperature: ptr(0.0), ReplayReasoning: true}, llm.Request{Messages: conversation()}, false},
		{"reasoning model", Config{Model: "o3-mini", MaxTokens: 100, ReasoningEffort: "low"}, llm.Request{Messages: conversation()[:3], Tools: []llm.ToolSpec{weatherTool}}, true},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%t", tt.name, stream), func(t *testing.T) {
				m := New(tt.cfg)
				want := goOpenAIBody(t, m, &tt.req, stream)
				for range 2 { // the second time from the cache
					got := assembled(t, m, &tt.req, stream)
					requireSameJSON(t, want, got)
					if tt.identical {
						assert.Equal(t, string(want), string(got), "byte-identical to go-openai's encoding")
					}
					require.NoError(t, validateChatRequest(route, got))
				}
			})
		}
	}
}

// TestWireCacheRewrite sends a growing transcript, then rewrites it the
// ways trimming and compaction do, and a caller mutating its own slices,
// and checks each body against a fresh encoding and that only messages not
// seen before were encoded.
func TestWireCacheRewrite(t *testing.T) {
	m := New(Config{Model: "gpt-4.1"})
	var msgs []defs.Message
	msgs = append(msgs, defs.UserMessage("Count."))
	for i := range 6 {
		id := fmt.Sprintf("call_%d", i)
		msgs = append(msgs,
			defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: id, Name: "increment", Arguments: json.RawMessage(`{}`)}}},
			defs.Message{Role: defs.RoleTool, ToolCallID: id, Content: fmt.Sprint(i + 1)})
	}
	check := func(name string, msgs []defs.Message, wantEncoded int) {
		t.Helper()
		req := &llm.Request{System: "You count.", Messages: msgs, Tools: []llm.ToolSpec{weatherTool}}
		before := m.wire.Encoded()
		got := assembled(t, m, req, false)
		want := goOpenAIBody(t, New(Config{Model: "gpt-4.1"}), req, false)
		assert.Equal(t, string(want), string(got), "%s: body differs from a fresh encoding", name)
		assert.Equal(t, wantEncoded, m.wire.Encoded()-before, "%s: messages encoded", name)
	}
	// Growth: one system prompt and each message once.
	// (First the system prompt and the user message, then each step an
	// assistant message and its result.)
	for n := 1; n <= len(msgs); n += 2 {
		check(fmt.Sprintf("grow to %d", n), msgs[:n], 2)
	}
	check("same again", msgs, 0)
	check("a shorter prefix (a retry of an earlier request)", msgs[:5], 0)

	// Trimming the oldest rounds.
	trimmed := append([]defs.Message{msgs[0]}, msgs[5:]...)
	check("trim the oldest rounds", trimmed, 0)

	// Compaction: a summary replaces a range.
	compacted := append([]defs.Message{msgs[0], defs.UserMessage("Summary: counted to 4.")}, msgs[9:]...)
	check("compact into a summary", compacted, 1)

	// A message replaced by one of the same length, role and call id.
	replaced := append([]defs.Message(nil), compacted...)
	replaced[len(replaced)-1].Content = "X"
	require.Equal(t, len(compacted[len(compacted)-1].Content), len(replaced[len(replaced)-1].Content))
	check("same-length replacement", replaced, 1)

	// The caller rewrites tool-call arguments in place, in the slice the
	// cache saw.
	args := []byte(`{"n":1}`)
	inPlace := append([]defs.Message(nil), replaced...)
	inPlace = append(inPlace, defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: "call_x", Name: "increment", Arguments: args}}})
	check("new call", inPlace, 1)
	copy(args, `{"n":2}`)
	check("arguments changed in place", inPlace, 1)
	inPlace[len(inPlace)-1].ToolCalls[0].ID = "call_y"
	check("id changed in place", inPlace, 1)

	// The system prompt changes every step: the messages stay cached.
	req := &llm.Request{System: "Count is 7.", Messages: inPlace, Tools: []llm.ToolSpec{weatherTool}}
	before := m.wire.Encoded()
	got := assembled(t, m, req, false)
	requireSameJSON(t, goOpenAIBody(t, m, req, false), got)
	assert.Equal(t, 1, m.wire.Encoded()-before, "a new system prompt alone is encoded")

	// An invalid message is an error naming it, and leaves the cache usable.
	bad := append(append([]defs.Message(nil), inPlace...), defs.Message{Role: defs.RoleTool, Content: "no id"})
	_, err := m.body(&llm.Request{Messages: bad}, false)
	require.Error(t, err)
	// The encoder's errors are untyped: the message's index is only in
	// the text.
	assert.Contains(t, err.Error(), fmt.Sprintf("message %d: tool message without tool_call_id", len(bad)-1))
	check("after an error (the system prompt is back to the first one)", inPlace, 1)
}

// TestWireCacheConversations interleaves conversations on one Model, as an
// agent and its sub-agents do: each keeps its own lane.
func TestWireCacheConversations(t *testing.T) {
	m := New(Config{})
	convs := make([][]defs.Message, wire.MaxLanes)
	for i := range convs {
		convs[i] = []defs.Message{defs.UserMessage(fmt.Sprintf("task %d", i))}
	}
	for step := range 5 {
		for i := range convs {
			convs[i] = append(convs[i], defs.AssistantMessage(strings.Repeat("a", step+1)), defs.UserMessage(fmt.Sprint("more ", step)))
			req := &llm.Request{Messages: convs[i]}
			before := m.wire.Encoded()
			got := assembled(t, m, req, false)
			requireSameJSON(t, goOpenAIBody(t, m, req, false), got)
			want := 2
			if step == 0 {
				want = 3
			}
			assert.Equal(t, want, m.wire.Encoded()-before, "conversation %d step %d", i, step)
		}
	}
}

// TestWireCacheRandomRewrites applies random edits to a transcript between
// requests (appends, trimming, summaries, replacements, edits in place of
// contents and tool-call arguments, a changing system prompt) and checks
// every body against a fresh encoding of the same request.
func TestWireCacheRandomRewrites(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 99))
		m := New(Config{Model: "gpt-4.1"})
		fresh := New(Config{Model: "gpt-4.1"})
		msgs := []defs.Message{defs.UserMessage("start")}
		next := 0
		text := func() string { return strings.Repeat(string(rune('a'+rng.IntN(26))), 1+rng.IntN(3)) }
		for step := range 60 {
			switch op := rng.IntN(10); {
			case op < 5: // a tool round
				id := fmt.Sprintf("call_%d", next)
				next++
				msgs = append(msgs,
					defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: id, Name: "f", Arguments: json.RawMessage(`{"x":"` + text() + `"}`)}}},
					defs.Message{Role: defs.RoleTool, ToolCallID: id, Content: text()})
			case op == 5 && len(msgs) > 3: // trim the oldest round
				msgs = append(msgs[:1:1], msgs[3:]...)
			case op == 6 && len(msgs) > 3: // a summary replaces a range
				i := 1 + rng.IntN(len(msgs)-1)
				j := i + rng.IntN(len(msgs)-i)
				msgs = slices.Concat(msgs[:i], []defs.Message{defs.UserMessage("summary " + text())}, msgs[j:])
			case op == 7: // a content edited in place, same length
				i := rng.IntN(len(msgs))
				if c := msgs[i].Content; c != "" {
					msgs[i].Content = strings.Repeat("z", len(c))
				}
			case op == 8: // tool-call arguments edited in place
				for i := range msgs {
					if len(msgs[i].ToolCalls) > 0 && rng.IntN(3) == 0 {
						args := msgs[i].ToolCalls[0].Arguments
						if len(args) > 7 {
							args[7] = byte('a' + rng.IntN(26))
						}
					}
				}
			default: // the same request again
			}
			req := &llm.Request{System: "step " + fmt.Sprint(step%3), Messages: msgs}
			got := assembled(t, m, req, step%2 == 0)
			want := assembled(t, fresh, req, step%2 == 0)
			fresh = New(Config{Model: "gpt-4.1"})
			require.Equal(t, string(want), string(got), "seed %d step %d", seed, step)
		}
	}
}
