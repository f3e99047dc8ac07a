package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
)

// TestWireMarkedEncodingsDropped: a long conversation's lane holds the
// marked encodings (the blocks with a breakpoint) only of the blocks its
// last request marked, not of every block ever marked: those would hold
// the conversation's encodings twice.
func TestWireMarkedEncodingsDropped(t *testing.T) {
	m := New(Config{})
	result := strings.Repeat("x", 2000)
	msgs := []defs.Message{defs.UserMessage("Task.")}
	for i := range 200 {
		id := fmt.Sprintf("toolu_%d", i)
		msgs = append(msgs,
			defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: id, Name: "noop", Arguments: json.RawMessage(`{}`)}}},
			defs.Message{Role: defs.RoleTool, ToolCallID: id, Content: result})
		req := &llm.Request{System: "sys", Messages: msgs, Tools: []llm.ToolSpec{toolB}, Repeated: len(msgs) - 2, Committed: len(msgs) - 1}
		requireSameBytes(t, sdkBody(t, New(Config{}), req), assembled(t, m, req), "step %d", i)
	}
	require.Len(t, m.enc.lanes, 1, "lanes")
	enc, marked := 0, 0
	for _, em := range m.enc.lanes[0].msgs {
		enc += len(em.enc)
		for _, me := range em.marked {
			marked += len(me.enc)
		}
	}
	assert.LessOrEqual(t, marked, 4*(len(result)+100), "bytes of marked encodings held, for %d bytes of encodings", enc)
}
