package runtime

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
)

// scriptMessages builds a conversation from tokens: u (user), a
// (assistant), cN (a call N in the last assistant message), rN (the
// result of call N), x (an unknown role).
func scriptMessages(script string) []defs.Message {
	var msgs []defs.Message
	for _, tok := range strings.Fields(script) {
		switch {
		case tok == "u":
			msgs = append(msgs, defs.UserMessage("u"))
		case tok == "a":
			msgs = append(msgs, defs.AssistantMessage("a"))
		case tok == "x":
			msgs = append(msgs, defs.Message{Role: "x"})
		case strings.HasPrefix(tok, "c") && len(msgs) > 0 && msgs[len(msgs)-1].Role == defs.RoleAssistant:
			last := &msgs[len(msgs)-1]
			last.ToolCalls = append(last.ToolCalls, defs.ToolCall{ID: tok[1:], Name: "t"})
		case strings.HasPrefix(tok, "r"):
			msgs = append(msgs, defs.Message{Role: defs.RoleTool, ToolCallID: tok[1:], Content: "r"})
		}
	}
	return msgs
}

// FuzzCheckCommit checks that a commit is checked as ValidateMessages
// checks it, whether the validator's state is kept (the new transcript has
// the shape of the old one where the validator has read it) or not, and
// that a kept state then checks later messages as a fresh one would.
func FuzzCheckCommit(f *testing.F) {
	f.Add("u a c1 r1 u a c2 r2", 5, "u a c1 r1 u a c2 r2 a", true)
	f.Add("u a c1 c2 r1 r2 u", 7, "u a c1 c2 r1 r2 u", false)
	f.Add("u a c1 r1", 4, "u a c1 r1 a c1 r1", false)
	f.Add("u a c1 r1 u", 3, "u a c1 u", true)
	f.Add("u a c1 r1 u", 2, "u a c2 r2 u", false)
	f.Fuzz(func(t *testing.T, oldScript string, fed int, newScript string, trim bool) {
		old, msgs := scriptMessages(oldScript), scriptMessages(newScript)
		if fed < 0 || fed > len(old) {
			return
		}
		if trim {
			// Trimming changes content only.
			for i := range msgs {
				if msgs[i].Role == defs.RoleTool {
					msgs[i].Content = "[trimmed]"
				}
			}
		}
		var v validator
		if v.feed(old[:fed], 0, nil) != nil {
			return // the runtime's validator only holds a state it accepted
		}
		v.n = fed
		want := ValidateMessages(msgs)
		keep, err := v.checkCommit(old, msgs)
		require.Equal(t, want, err, "checkCommit and ValidateMessages disagree")
		if err != nil || !keep {
			return
		}
		// The kept state is the state of msgs[:fed]: checking msgs from it
		// gives what a fresh check of msgs gives.
		var fresh validator
		require.NoError(t, fresh.check(msgs, msgs, len(msgs)))
		require.NoError(t, v.check(msgs, msgs, len(msgs)))
		assert.Empty(t, cmp.Diff(fresh, v, cmp.AllowUnexported(validator{})), "kept state differs from a fresh one (-fresh +kept)")
	})
}
