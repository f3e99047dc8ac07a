package runtime_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/snapshots"
	"github.com/reprompt/reprompt/state"
)

// Goroutines that parallel tool calls start, and that outlive the calls,
// disable and remind definitions, read the collections and the state, and
// set state, while the next executions declare (changed definitions too)
// and reconcile, and checkpoints encode the state: under -race, nothing
// races.
func TestToolGoroutinesOutliveTheirCalls(t *testing.T) {
	var (
		stop atomic.Bool
		wg   sync.WaitGroup
	)
	defer func() { stop.Store(true); wg.Wait() }()
	var tools defs.Collection // set by the effect, before any tool runs
	fn := func(p *prompt.Prompt) error {
		p.Effect(effects.Once, func(_ context.Context, s *effects.Step) error { tools = s.Tools; return nil })
		n, setN := prompt.State(p, "n", 0)
		p.Def("n", fmt.Sprint(n))
		p.DefData("data", map[string]any{"n": n})
		if n%2 == 0 {
			p.DefSystem("even", "n is even")
		}
		var h defs.Handle
		h = prompt.DefTool(p, "spawn", "Spawn.", func(ctx context.Context, _ noArgs) (string, error) {
			setN.Update(ctx, func(n int) int { return n + 1 })
			tools := tools
			wg.Go(func() {
				for !stop.Load() {
					h.Disable()
					h.Remind()
					for d := range tools.All() {
						_ = d.Name
					}
					_ = tools.Len()
					_, _ = tools.Get("spawn")
					_, _ = state.Get[int](ctx, p.Store(), "n")
					// With the call's context: recorded while the call
					// runs, dropped after (see state.Tx).
					_ = state.Set(ctx, p.Store(), "n", 7)
				}
			})
			return "spawned", nil
		})
		p.User("go")
		return nil
	}
	var replies []snapshots.Reply
	for range 5 {
		replies = append(replies, snapshots.CallTools(snapshots.Call{Name: "spawn"}, snapshots.Call{Name: "spawn"}))
	}
	replies = append(replies, snapshots.Text("done"))
	m := snapshots.Script(replies...)
	_, err := runtime.Run(context.Background(), m, fn, runtime.Config{Store: session.NewMemory(), SessionID: "s"})
	require.NoError(t, err)
}
