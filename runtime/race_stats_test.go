package runtime_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// Runner.Stats may be polled from another goroutine while the run goes on
// (a progress report): under -race, it reads nothing the run writes
// unguarded, the start time included.
func TestStatsPolledDuringRun(t *testing.T) {
	fn := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "noop", "Nothing.", func(context.Context, noArgs) (string, error) { return "", nil })
		p.User("go")
		return nil
	}
	replies := make([]snapshots.Reply, 0, 21)
	for range 20 {
		replies = append(replies, snapshots.CallTools(snapshots.Call{Name: "noop"}))
	}
	replies = append(replies, snapshots.Text("done"))
	r := runtime.New(snapshots.Script(replies...), fn, runtime.Config{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			s := r.Stats()
			assert.GreaterOrEqual(t, s.Elapsed, time.Duration(0), "Stats().Elapsed during the run")
		}
	})
	res, err := r.Run(context.Background())
	close(stop)
	wg.Wait()
	require.NoError(t, err)
	assert.Len(t, res.Steps, 21)
	assert.Positive(t, r.Stats().Elapsed)
}

// Config.StopWhen is the run's: it is not called for the steps of its
// sub-agents, which run in tool calls, in parallel, on other goroutines
// (the package doc promises callbacks on the goroutine that drives the
// runner). Before, it was, with Step.Request().Agent set, and a condition
// on the step number stopped the sub-agents too.
func TestStopWhenIsNotCalledForSubAgents(t *testing.T) {
	var calls atomic.Int32
	var agents []string
	var mu sync.Mutex
	cfg := runtime.Config{StopWhen: func(last *runtime.Step) bool {
		calls.Add(1)
		mu.Lock()
		agents = append(agents, last.Request().Agent)
		mu.Unlock()
		return false
	}}
	parent := func(p *prompt.Prompt) error {
		p.DefAgent("worker", "Work.", func(sp *prompt.Prompt) error {
			prompt.DefTool(sp, "work", "Work.", func(context.Context, noArgs) (string, error) { return "worked", nil })
			return nil
		})
		p.User("go")
		return nil
	}
	res := run(t, twoWorkersScript(1), parent, cfg)
	require.Len(t, res.Steps, 2)
	require.Len(t, res.Steps[0].Agents, 2, "both sub-agents ran")
	// Once: the last step ends the run by its text before StopWhen is asked.
	assert.Equal(t, int32(1), calls.Load(), "StopWhen called for the run's first step only")
	assert.Equal(t, []string{""}, agents)
}
