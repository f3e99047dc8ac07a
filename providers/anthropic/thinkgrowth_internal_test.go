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

// TestWireBreakpointsDoNotReparseHistory: placing the breakpoints of a
// request whose Repeated and Committed reach far back costs what the new
// messages cost, not a parse of every assistant message's thinking blocks:
// the allocations of a body whose messages are all cached do not grow with
// the history.
func TestWireBreakpointsDoNotReparseHistory(t *testing.T) {
	allocs := func(rounds int) float64 {
		m := New(Config{})
		msgs := []defs.Message{defs.UserMessage("Count.")}
		for i := range rounds {
			id := fmt.Sprintf("toolu_%d", i)
			msgs = append(msgs,
				defs.Message{Role: defs.RoleAssistant, Meta: thinkingMeta, ToolCalls: []defs.ToolCall{{ID: id, Name: "get_weather", Arguments: json.RawMessage(`{}`)}}},
				defs.Message{Role: defs.RoleTool, ToolCallID: id, Content: fmt.Sprint(i)})
		}
		req := &llm.Request{System: "You count.", Messages: msgs, Tools: []llm.ToolSpec{toolA}, Repeated: len(msgs), Committed: len(msgs) - 1}
		_, err := m.body(req) // the blocks cached
		require.NoError(t, err, "body")
		return testing.AllocsPerRun(20, func() {
			_, err := m.body(req)
			assert.NoError(t, err, "body")
		})
	}
	short, long := allocs(10), allocs(400)
	assert.LessOrEqual(t, long, short+2, "allocations of a cached body: %v with 10 rounds, %v with 400", short, long)
}
