package anthropic_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects/builtin"
	"github.com/reprompt/reprompt/examples/longsession/sim"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/providers/anthropic"
	"github.com/reprompt/reprompt/runtime"
)

// TestBreakpointsOverLongSession runs examples/longsession's 320-step
// session (seed 1) under the default strategy at Anthropic's prices
// through the adapter against the local server, and checks at every step
// the invariant prompt caching needs (checkBreakpoints): the bytes up to
// each breakpoint of the previous request are the same in this one, or
// the step's record names the commit (and the effect that made it), or the
// definition, that broke them. It also checks the runtime's promise behind
// the committed part's breakpoint: the first Request.Committed messages of
// a request are in the next step's request unchanged, unless that step's
// record names a compaction as the commit that rewrote them (compaction
// declares nothing: it rewrites from after the task when it acts).
func TestBreakpointsOverLongSession(t *testing.T) {
	if testing.Short() {
		t.Skip("320 steps through the wire; run without -short")
	}
	const steps = 320
	model := sim.New(steps, 1, 0)
	rl := newRelay(t, model, anthropic.Config{MaxTokens: 4096})
	defaults := builtin.Defaults(builtin.Profile{Window: sim.Window, OutputReserve: sim.Reserve, CachedInputFraction: 0.1, CacheWriteFraction: 1.25})
	agent := func(p *prompt.Prompt) error {
		model.Declare(p)
		defaults.Register(p)
		return nil
	}
	res, err := runtime.Run(context.Background(), rl, agent, runtime.Config{MaxSteps: steps + 10, Window: sim.Window, Reserve: sim.Reserve, Counter: sim.Counter})
	require.NoError(t, err)
	require.Len(t, res.Steps, steps)
	require.NotZero(t, model.Summaries(), "the session compacted")

	readAll, readInto, causes := checkBreakpoints(t, rl.stepRequests(t), res.Steps)
	t.Logf("%d steps: %d read every breakpoint of the previous request, %d of the others one in the messages; why the others did not: %v",
		len(res.Steps)-1, readAll, readInto, causes)

	// The committed part, request by request.
	var reqs []relayed
	for _, s := range rl.sent {
		if s.purpose == llm.PurposeStep {
			reqs = append(reqs, s)
		}
	}
	require.Len(t, reqs, steps)
	kept, compacted := 0, 0
	for i := 1; i < len(reqs); i++ {
		prev, cur := reqs[i-1], reqs[i]
		if prev.committed == 0 {
			continue
		}
		if len(cur.messages) >= prev.committed && slices.EqualFunc(prev.messages[:prev.committed], cur.messages[:prev.committed], defs.Message.Identical) {
			kept++
			continue
		}
		why := res.Steps[i].Cache
		require.True(t, strings.HasPrefix(why, "transcript rewritten by commit") && strings.Contains(why, "compact"),
			"step %d rewrote the previous request's committed part (%d messages), and its record says %q", res.Steps[i].Number, prev.committed, why)
		compacted++
	}
	t.Logf("committed parts kept: %d; rewritten by compaction: %d", kept, compacted)
	assert.Greater(t, kept, 200, "requests whose committed part the next one kept")
	assert.Positive(t, readInto, "steps that read a breakpoint in the messages")
}
