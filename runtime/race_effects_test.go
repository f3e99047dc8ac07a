package runtime_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// An effect that asks the model for several completions at once, from
// goroutines it starts and waits for (summarising chunks in parallel):
// under -race, nothing races, and every completion is recorded and
// counted in the run's usage.
func TestEffectCompletesFromGoroutines(t *testing.T) {
	const n = 4
	fn := func(p *prompt.Prompt) error {
		p.Effect(effects.Once, func(ctx context.Context, s *effects.Step) error {
			var wg sync.WaitGroup
			for range n {
				wg.Go(func() {
					_, err := s.Model.Complete(ctx, "Summarise.", "some text")
					assert.NoError(t, err, "Complete from a goroutine")
				})
			}
			wg.Wait()
			return nil
		})
		p.User("go")
		return nil
	}
	var replies []snapshots.Reply
	for range n {
		replies = append(replies, snapshots.Summary("short"))
	}
	m := snapshots.Script(append(replies, snapshots.Text("done"))...)
	res := run(t, m, fn, runtime.Config{})
	assert.Len(t, res.Steps[0].Summaries, n, "summaries recorded")
	var want int
	for _, req := range m.Requests() {
		want += snapshots.EstimateTokens(req)
	}
	assert.Equal(t, want, res.Usage.InputTokens, "Usage.InputTokens (the step's and the summaries')")
}
