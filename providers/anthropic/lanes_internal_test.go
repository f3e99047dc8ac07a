package anthropic

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
)

// TestWireLanesSameOpening: conversations that open with the same message
// (the runs of one eval case, sub-agents given one task) on one Model each
// keep a lane of their own: a step encodes its new blocks, not the whole
// conversation again because another one's request came in between.
func TestWireLanesSameOpening(t *testing.T) {
	m := New(Config{})
	const convs, steps = 3, 60
	var msgs [convs][]defs.Message
	for k := range convs {
		msgs[k] = []defs.Message{defs.UserMessage("Same task.")}
	}
	for n := range steps {
		for k := range convs {
			id := fmt.Sprintf("toolu_%d_%d", k, n)
			msgs[k] = append(msgs[k],
				defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: id, Name: "noop", Arguments: json.RawMessage(`{}`)}}},
				defs.Message{Role: defs.RoleTool, ToolCallID: id, Content: "ok"})
			req := &llm.Request{System: "sys", Messages: msgs[k], Tools: []llm.ToolSpec{toolB}}
			requireSameBytes(t, sdkBody(t, New(Config{}), req), assembled(t, m, req), "conversation %d, step %d", k, n)
		}
	}
	// Two new blocks a step, and the marked form of one (where the next
	// step's request reads), made once whatever the other conversations
	// marked in between.
	assert.LessOrEqual(t, m.enc.encoded, convs*(3*steps+4), "blocks encoded for %d new ones", 2*convs*steps)

	// A conversation rewritten at its end (a result trimmed once answered)
	// stays in its lane: no other lane is taken for it.
	require.Len(t, m.enc.lanes, convs, "lanes")
	trimmed := append([]defs.Message(nil), msgs[0]...)
	trimmed[len(trimmed)-1].Content = "k"
	id := "toolu_next"
	trimmed = append(trimmed,
		defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: id, Name: "noop", Arguments: json.RawMessage(`{}`)}}},
		defs.Message{Role: defs.RoleTool, ToolCallID: id, Content: "ok"})
	req := &llm.Request{System: "sys", Messages: trimmed, Tools: []llm.ToolSpec{toolB}}
	requireSameBytes(t, sdkBody(t, New(Config{}), req), assembled(t, m, req), "trimmed at its end")
	assert.Len(t, m.enc.lanes, convs, "lanes after a rewrite of a conversation's end")
}

// TestWireLanesContinuedSummary: a summary request that continues a
// conversation (its older messages, then an instruction) does not cost
// the compacted request that follows the encodings of the messages kept
// after the summary.
func TestWireLanesContinuedSummary(t *testing.T) {
	m := New(Config{})
	msgs := []defs.Message{defs.UserMessage("Task.")}
	for i := range 12 {
		id := fmt.Sprintf("toolu_%d", i)
		msgs = append(msgs,
			defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: id, Name: "noop", Arguments: json.RawMessage(`{}`)}}},
			defs.Message{Role: defs.RoleTool, ToolCallID: id, Content: fmt.Sprint("result ", i)})
		_, err := m.body(&llm.Request{System: "sys", Messages: msgs, Tools: []llm.ToolSpec{toolB}})
		require.NoError(t, err, "step %d", i)
	}
	older := msgs[:5] // the task and two rounds summarised, ten kept
	sum := append(append([]defs.Message(nil), older...), defs.UserMessage("Summarise."))
	_, err := m.body(&llm.Request{System: "sys", Messages: sum, Tools: []llm.ToolSpec{toolB}, Purpose: llm.PurposeSummary})
	require.NoError(t, err, "the summary request")

	compacted := append([]defs.Message{msgs[0], defs.UserMessage("<summary>Two rounds.</summary>")}, msgs[5:]...)
	compacted = append(compacted,
		defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: "toolu_new", Name: "noop", Arguments: json.RawMessage(`{}`)}}},
		defs.Message{Role: defs.RoleTool, ToolCallID: "toolu_new", Content: "new"})
	req := &llm.Request{System: "sys", Messages: compacted, Tools: []llm.ToolSpec{toolB}}
	before := m.enc.encoded
	requireSameBytes(t, sdkBody(t, New(Config{}), req), assembled(t, m, req), "the compacted request")
	// The summary and the two new blocks, and the marked forms of a few.
	assert.LessOrEqual(t, m.enc.encoded-before, 6, "blocks encoded for the compacted request")
}
