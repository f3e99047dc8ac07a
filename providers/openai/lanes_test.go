package openai

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
)

// TestWireLanesSameOpening: conversations that open with the same message
// (the k runs of one eval case on one Model, sub-agents given one task)
// each keep a lane of their own: a step encodes its new messages, not the
// whole conversation again because another one's request came in between;
// and a conversation trimmed at its end stays in its lane.
func TestWireLanesSameOpening(t *testing.T) {
	m := New(Config{Model: "gpt-4.1"})
	const convs, steps = 3, 60
	var msgs [convs][]defs.Message
	for k := range convs {
		msgs[k] = []defs.Message{defs.UserMessage("Same task.")}
	}
	before := m.wire.Encoded()
	for n := range steps {
		for k := range convs {
			id := fmt.Sprintf("call_%d_%d", k, n)
			msgs[k] = append(msgs[k],
				defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: id, Name: "increment", Arguments: json.RawMessage(`{}`)}}},
				defs.Message{Role: defs.RoleTool, ToolCallID: id, Content: "ok"})
			req := &llm.Request{System: "You count.", Messages: msgs[k], Tools: []llm.ToolSpec{weatherTool}}
			want := goOpenAIBody(t, New(Config{Model: "gpt-4.1"}), req, false)
			assert.Equal(t, string(want), string(assembled(t, m, req, false)), "conversation %d, step %d", k, n)
		}
	}
	// The system prompt and the task once a lane, two messages a step.
	assert.LessOrEqual(t, m.wire.Encoded()-before, convs*(2*steps+2), "messages encoded for %d new ones", 2*convs*steps)

	trimmed := append([]defs.Message(nil), msgs[0]...)
	trimmed[len(trimmed)-1].Content = "k"
	trimmed = append(trimmed,
		defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: "call_next", Name: "increment", Arguments: json.RawMessage(`{}`)}}},
		defs.Message{Role: defs.RoleTool, ToolCallID: "call_next", Content: "ok"})
	req := &llm.Request{System: "You count.", Messages: trimmed, Tools: []llm.ToolSpec{weatherTool}}
	before = m.wire.Encoded()
	assert.Equal(t, string(goOpenAIBody(t, New(Config{Model: "gpt-4.1"}), req, false)), string(assembled(t, m, req, false)), "trimmed at its end")
	assert.Equal(t, 3, m.wire.Encoded()-before, "the trimmed result and the two new messages")
}
