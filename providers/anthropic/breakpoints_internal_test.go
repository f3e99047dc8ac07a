package anthropic

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
)

// TestEndsOfMatchesTurns: endsOf finds the last block of the first k
// messages where turnsOf puts it, for transcripts with leading system
// messages, empty texts, thinking blocks, parallel calls and merged
// turns.
func TestEndsOfMatchesTurns(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	thinking := `[{"type":"thinking","thinking":"hmm","signature":"s"},{"type":"redacted_thinking","data":"x"},{"type":"other"}]`
	for trial := range 300 {
		var msgs []defs.Message
		for range r.IntN(3) {
			msgs = append(msgs, defs.Message{Role: defs.RoleSystem, Content: "sys"})
		}
		for i := range 2 + r.IntN(12) {
			switch r.IntN(6) {
			case 0:
				msgs = append(msgs, defs.UserMessage([]string{"", " ", "do it"}[r.IntN(3)]))
			case 1:
				msgs = append(msgs, defs.Message{Role: defs.RoleSystem, Content: "later system"})
			case 2, 3:
				m := defs.Message{Role: defs.RoleAssistant, Content: []string{"", "ok"}[r.IntN(2)]}
				if r.IntN(2) == 0 {
					m.Meta = map[string]string{MetaThinking: thinking}
				}
				for c := range r.IntN(3) {
					m.ToolCalls = append(m.ToolCalls, defs.ToolCall{ID: fmt.Sprint("c", i, c), Name: "f", Arguments: json.RawMessage(`{}`)})
				}
				msgs = append(msgs, m)
			default:
				msgs = append(msgs, defs.Message{Role: defs.RoleTool, ToolCallID: fmt.Sprint("c", i), Content: []string{"", "res"}[r.IntN(2)]})
			}
		}
		first := 0
		for first < len(msgs) && msgs[first].Role == defs.RoleSystem {
			first++
		}
		for k := 0; k <= len(msgs); k++ {
			want := blockPos{-1, -1}
			if k > first {
				turns, err := turnsOf(msgs[first:k], first)
				require.NoError(t, err)
				if len(turns) > 0 {
					want = blockPos{len(turns) - 1, len(turns[len(turns)-1].blocks) - 1}
				}
			}
			got := endsOf(msgs, k, 0)
			assert.Equal(t, want, got[0], "trial %d: the end of the first %d messages", trial, k)
			got = endsOf(msgs, 1, k)
			assert.Equal(t, want, got[1], "trial %d: the end of the first %d messages, second count", trial, k)
		}
	}
}
