package runtime_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// TestRewriteOfReasoningOrErrorFlag: a commit that changes only a
// message's reasoning (an effect that drops the reasoning of answered
// turns) or its error flag changes the request: the runtime counts the
// message again and does not take the request as repeating the previous
// one past it (Request.Repeated, Step.PrefixTokens, Step.Cache).
func TestRewriteOfReasoningOrErrorFlag(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(m *defs.Message)
		at     int // the message changed: 1, the first reply; 2, its result
	}{
		{"reasoning dropped", func(m *defs.Message) { m.Reasoning = "" }, 1},
		{"error flag set", func(m *defs.Message) { m.IsError = true }, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rewrite := func(_ context.Context, s *effects.Step) error {
				if s.Number == 2 {
					out := s.CopyTranscript()
					tc.change(&out[tc.at])
					s.CommitMessages(out)
				}
				return nil
			}
			run := func(reasoning string, fx bool) *runtime.Result {
				fn := func(p *prompt.Prompt) error {
					prompt.DefTool(p, "read", "reads", func(context.Context, struct{}) (string, error) { return "a result", nil })
					if fx {
						p.Effect(effects.Always, rewrite, effects.Key("rewrite"))
					}
					p.User("go")
					return nil
				}
				// No usage reported: the runtime's counts are not calibrated
				// by the provider's, which would tell the runs apart.
				none := &llm.Usage{}
				call := snapshots.Reply{Reasoning: reasoning, Calls: []snapshots.Call{{Name: "read"}}, Usage: none}
				script := snapshots.Script(call, snapshots.Reply{Calls: []snapshots.Call{{Name: "read"}}, Usage: none}, snapshots.Reply{Text: "done", Usage: none})
				res, err := runtime.Run(t.Context(), script, fn, runtime.Config{})
				require.NoError(t, err)
				require.Len(t, res.Steps, 3)
				return res
			}
			long := "Let me think about which file to read first, at some length. "
			res := run(long+long+long, true)
			step1, step2 := res.Steps[1], res.Steps[2]
			// Step 2 repeats step 1's request up to the changed message.
			assert.Equal(t, 0, step2.Request().Repeated, "Repeated: step 1's request is not repeated whole")
			assert.Less(t, step2.PrefixTokens, step1.InputTokens, "PrefixTokens: not all of step 1's request")
			assert.NotEmpty(t, step2.Cache, "Cache: why the prefix broke")
			if tc.at == 1 {
				// Counted as a run whose reply had no reasoning is.
				plain := run("", false)
				assert.Equal(t, plain.Steps[2].InputTokens, step2.InputTokens, "InputTokens after the reasoning was dropped")
			}
		})
	}
}
