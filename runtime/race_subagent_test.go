package runtime_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// Two sub-agents run in parallel tool calls of the parent, and the tools of
// each, run in parallel too, change the parent's state through a setter
// the sub-agent's prompt function closed over. Each change belongs to the
// parent's call that ran the sub-agent: the parent's state gets the
// changes in call order (those of A, then those of B), whatever the
// timing. Before the fix, the changes of the sub-agent whose parent call
// was bound by goroutine id were recorded in the transaction of the other
// call (the one found by its frame on the stack), so the order depended on
// timing.
func TestParallelSubAgentsChangeParentStateInCallOrder(t *testing.T) {
	t.Run("parallel calls", func(t *testing.T) {
		for range 10 {
			parallelSubAgentsOnce(t, 2, runtime.Config{})
			if t.Failed() {
				return
			}
		}
	})
	// With a tool timeout, even a sub-agent's single call runs on a
	// goroutine of its own.
	t.Run("single calls with a timeout", func(t *testing.T) {
		for range 10 {
			parallelSubAgentsOnce(t, 1, runtime.Config{ToolTimeout: time.Minute})
			if t.Failed() {
				return
			}
		}
	})
}

// parallelSubAgentsOnce runs two sub-agents in parallel calls, each making
// calls calls of its tool at once.
func parallelSubAgentsOnce(t *testing.T, calls int, cfg runtime.Config) {
	// All the sub-agents' tool calls wait for each other, so that both
	// parent calls are under way when they change the parent's state.
	var arrived sync.WaitGroup
	arrived.Add(2 * calls)
	parent := func(p *prompt.Prompt) error {
		_, setLog := prompt.State(p, "log", []string{})
		p.DefAgent("worker", "Work.", func(sp *prompt.Prompt) error {
			task := sp.Input()
			prompt.DefTool(sp, "work", "Work.", func(ctx context.Context, _ noArgs) (string, error) {
				arrived.Done()
				waitTimeout(t, &arrived)
				setLog.Update(ctx, func(l []string) []string { return append(slices.Clone(l), task) })
				return "worked", nil
			})
			return nil
		})
		p.User("go")
		return nil
	}
	res := run(t, twoWorkersScript(calls), parent, cfg)
	want := append(slices.Repeat([]string{"A"}, calls), slices.Repeat([]string{"B"}, calls)...)
	assert.Empty(t, cmp.Diff(want, res.Steps[0].State["log"]), "parent state mismatch (-want +got)")
}

// twoWorkersScript answers a parent that calls the sub-agent "worker"
// twice in parallel (tasks A and B), each instance calling its tool "work"
// calls times at once and then answering.
func twoWorkersScript(calls int) *snapshots.Model {
	sub := snapshots.Reply{Func: func(req *llm.Request) snapshots.Reply {
		if last := req.Messages[len(req.Messages)-1]; last.Role == defs.RoleTool {
			return snapshots.Text("done")
		}
		return snapshots.CallTools(slices.Repeat([]snapshots.Call{{Name: "work"}}, calls)...)
	}}
	return snapshots.Script(
		snapshots.CallTools(
			snapshots.Call{Name: "worker", Args: prompt.AgentArgs{Task: "A"}},
			snapshots.Call{Name: "worker", Args: prompt.AgentArgs{Task: "B"}},
		),
		sub, sub, sub, sub,
		snapshots.Text("all done"),
	)
}

// waitTimeout waits for wg, failing t if it takes more than 10 seconds.
func waitTimeout(t *testing.T, wg *sync.WaitGroup) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		assert.Fail(t, "the tool calls did not all start")
	}
}

type lookupArgs struct {
	Key string `json:"key"`
}

// Runs in parallel goroutines, each with parallel sub-agents, share the
// process-wide caches (tool schemas and validators, the YAML of data,
// call sites): under -race, nothing they share is written unguarded.
func TestParallelRunsShareCaches(t *testing.T) {
	worker := func(p *prompt.Prompt) error {
		p.DefData("config", map[string]any{"mode": "fast", "tags": []any{"a", "b"}})
		prompt.DefTool(p, "lookup", "Look up.", func(_ context.Context, a lookupArgs) (string, error) {
			return "value of " + a.Key, nil
		})
		return nil
	}
	parent := func(p *prompt.Prompt) error {
		p.DefData("config", map[string]any{"mode": "fast", "tags": []any{"a", "b"}})
		p.DefAgent("worker", "Work.", worker)
		prompt.DefTool(p, "lookup", "Look up.", func(_ context.Context, a lookupArgs) (string, error) {
			return "value of " + a.Key, nil
		})
		p.User("go")
		return nil
	}
	sub := snapshots.Reply{Func: func(req *llm.Request) snapshots.Reply {
		if last := req.Messages[len(req.Messages)-1]; last.Role == defs.RoleTool {
			return snapshots.Text("done")
		}
		return snapshots.CallTools(snapshots.Call{Name: "lookup", Args: lookupArgs{"x"}}, snapshots.Call{Name: "lookup", Args: lookupArgs{"y"}})
	}}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			m := snapshots.Script(
				snapshots.CallTools(
					snapshots.Call{Name: "worker", Args: prompt.AgentArgs{Task: "A"}},
					snapshots.Call{Name: "lookup", Args: lookupArgs{"z"}},
					snapshots.Call{Name: "worker", Args: prompt.AgentArgs{Task: "B"}},
				),
				sub, sub, sub, sub,
				snapshots.Text("all done"),
			)
			res, err := runtime.Run(context.Background(), m, parent, runtime.Config{})
			if !assert.NoError(t, err) {
				return
			}
			for _, r := range res.Steps[0].ToolResults {
				assert.False(t, r.IsError, "result %+v is an error", r)
			}
		})
	}
	wg.Wait()
}
