package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
)

// mixedCalls is a reply with parallel calls of every kind: idempotent
// (look), not idempotent with a state change (inc, twice), needing
// approval with a state change (pay), failing (fail), panicking (boom)
// and timing out (slow).
var mixedCalls = []defs.ToolCall{
	{ID: "l1", Name: "look", Arguments: json.RawMessage(`{}`)},
	{ID: "i1", Name: "inc", Arguments: json.RawMessage(`{}`)},
	{ID: "p1", Name: "pay", Arguments: json.RawMessage(`{}`)},
	{ID: "f1", Name: "fail", Arguments: json.RawMessage(`{}`)},
	{ID: "b1", Name: "boom", Arguments: json.RawMessage(`{}`)},
	{ID: "s1", Name: "slow", Arguments: json.RawMessage(`{}`)},
	{ID: "i2", Name: "inc", Arguments: json.RawMessage(`{}`)},
}

// mixedModel calls mixedCalls at its first step and answers at the next.
type mixedModel struct{}

func (mixedModel) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	for _, m := range req.Messages {
		if m.Role == defs.RoleAssistant {
			return &llm.Reply{Message: defs.AssistantMessage("done")}, nil
		}
	}
	return &llm.Reply{Message: defs.Message{Role: defs.RoleAssistant, ToolCalls: mixedCalls}}, nil
}

// invocations counts the runs of each call id, over every process of a
// session.
type invocations struct {
	mu sync.Mutex
	n  map[string]int
}

func (v *invocations) add(ctx context.Context) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.n == nil {
		v.n = map[string]int{}
	}
	v.n[prompt.CallID(ctx)]++
}

func (v *invocations) get(id string) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.n[id]
}

func (v *invocations) fn(p *prompt.Prompt) error {
	_, setN := prompt.State(p, "n", 0)
	_, setPaid := prompt.State(p, "paid", 0)
	p.DefSystem("role", "You do things.")
	p.User("go")
	prompt.DefTool(p, "look", "look", func(ctx context.Context, _ struct{}) (string, error) {
		v.add(ctx)
		return "seen", nil
	}, prompt.Idempotent())
	prompt.DefTool(p, "inc", "inc", func(ctx context.Context, _ struct{}) (string, error) {
		v.add(ctx)
		setN.Update(ctx, func(n int) int { return n + 1 })
		return "ok", nil
	})
	prompt.DefTool(p, "pay", "pay", func(ctx context.Context, _ struct{}) (string, error) {
		v.add(ctx)
		setPaid.Update(ctx, func(n int) int { return n + 10 })
		return "ok", nil
	}, prompt.NeedsApproval())
	prompt.DefTool(p, "fail", "fail", func(ctx context.Context, _ struct{}) (string, error) {
		v.add(ctx)
		return "", errors.New("no luck")
	})
	prompt.DefTool(p, "boom", "boom", func(ctx context.Context, _ struct{}) (string, error) {
		v.add(ctx)
		panic("boom")
	})
	prompt.DefTool(p, "slow", "slow", func(ctx context.Context, _ struct{}) (string, error) {
		v.add(ctx)
		<-ctx.Done()
		return "", ctx.Err()
	})
	return nil
}

// killingStore is a store whose process dies at the k-th Save (counting
// from 1): before it is written, or after it is written and before Save
// returns. Every Save after that fails too: the process is gone.
type killingStore struct {
	session.Store
	k     int
	after bool

	mu    sync.Mutex
	saves int
}

func (s *killingStore) Save(ctx context.Context, cp *session.Checkpoint) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saves++
	switch {
	case s.k == 0 || s.saves < s.k:
		return s.Store.Save(ctx, cp)
	case s.saves == s.k && s.after:
		if err := s.Store.Save(ctx, cp); err != nil {
			return err
		}
	}
	return errCrash
}

// driveMixed runs r to the end, approving p1 when asked; it returns the
// first error.
func driveMixed(ctx context.Context, r *runtime.Runner) (*runtime.Result, error) {
	for range 3 {
		res, err := r.Run(ctx)
		if err != nil {
			return res, err
		}
		if len(res.Awaiting) == 0 {
			return res, nil
		}
		if err := r.Approve("p1"); err != nil {
			return res, err
		}
	}
	return nil, errors.New("still awaiting approval")
}

// TestKillAtEverySaveOfAParallelStep kills the run at every checkpoint of
// a step with parallel calls of every kind, before and after the
// checkpoint is written, resumes it in a new runner (again and again if it
// must), and checks the invariants of a resume: each non-idempotent call
// ran at most once and each idempotent one at least once, results are in
// call order, the state changes of the calls whose results were kept are
// applied exactly once, and the transcript is valid.
func TestKillAtEverySaveOfAParallelStep(t *testing.T) {
	t.Run("runtime", func(t *testing.T) { killAtEverySave(t, nil) })
	t.Run("executor", func(t *testing.T) { killAtEverySave(t, goExecutor{}) })
}

// goExecutor is a ToolExecutor that runs each call in a goroutine of its
// own, with ToolCalls.Run.
type goExecutor struct{}

func (goExecutor) ExecuteTools(ctx context.Context, calls *runtime.ToolCalls) error {
	var wg sync.WaitGroup
	for _, i := range calls.Pending() {
		wg.Go(func() { calls.Run(i) })
	}
	wg.Wait()
	return nil
}

func killAtEverySave(t *testing.T, x runtime.ToolExecutor) {
	ctx := context.Background()
	cfg := func(st session.Store) runtime.Config {
		return runtime.Config{Store: st, SessionID: "mixed", ToolTimeout: 50 * time.Millisecond, ToolExecutor: x}
	}
	count := &killingStore{Store: session.NewMemory()}
	var plain invocations
	_, err := driveMixed(ctx, runtime.New(mixedModel{}, plain.fn, cfg(count)))
	require.NoError(t, err)
	total := count.saves
	require.Greater(t, total, 5)

	for k := 1; k <= total; k++ {
		for _, after := range []bool{false, true} {
			t.Run(fmt.Sprintf("save%d/after=%t", k, after), func(t *testing.T) {
				mem := session.NewMemory()
				var inv invocations
				kill := &killingStore{Store: mem, k: k, after: after}
				_, err := driveMixed(ctx, runtime.New(mixedModel{}, inv.fn, cfg(kill)))
				if err == nil {
					// Calls that finish out of order share a save: this run
					// saved fewer times than the first.
					require.Less(t, kill.saves, k)
					return
				}
				require.ErrorIs(t, err, errCrash)
				var res *runtime.Result
				for range 3 {
					var r *runtime.Runner
					if r, err = runtime.Resume(ctx, mixedModel{}, inv.fn, cfg(mem)); errors.Is(err, session.ErrNotFound) {
						r = runtime.New(mixedModel{}, inv.fn, cfg(mem)) // killed before the first checkpoint
					} else {
						require.NoError(t, err)
					}
					if res, err = driveMixed(ctx, r); err == nil || errors.Is(err, runtime.ErrDone) {
						break // ErrDone: killed after the last save, the run had ended
					}
				}
				if !errors.Is(err, runtime.ErrDone) {
					require.NoError(t, err)
				}
				checkMixed(t, &inv, res)
			})
		}
	}
}

func checkMixed(t *testing.T, inv *invocations, res *runtime.Result) {
	t.Helper()
	require.NoError(t, runtime.ValidateMessages(res.Transcript))
	var ids []string
	results := map[string]defs.Message{}
	for _, m := range res.Transcript {
		if m.Role == defs.RoleTool {
			ids = append(ids, m.ToolCallID)
			results[m.ToolCallID] = m
		}
	}
	var want []string
	for _, c := range mixedCalls {
		want = append(want, c.ID)
	}
	assert.Equal(t, want, ids, "one result per call, in call order")
	assert.GreaterOrEqual(t, inv.get("l1"), 1, "the idempotent call ran")
	assert.Equal(t, "seen", results["l1"].Content)
	for _, id := range []string{"i1", "i2", "p1", "f1", "b1", "s1"} {
		assert.LessOrEqual(t, inv.get(id), 1, "call %s ran more than once", id)
		if inv.get(id) == 0 {
			assert.Contains(t, results[id].Content, "interrupted", "call %s did not run: its result says so", id)
		}
	}
	ok := func(id string) int {
		if m := results[id]; !m.IsError && m.Content == "ok" {
			return 1
		}
		assert.True(t, results[id].IsError, "call %s: %q", id, results[id].Content)
		return 0
	}
	n, err := runtime.StateOf[int](res, "n")
	require.NoError(t, err)
	assert.Equal(t, ok("i1")+ok("i2"), n, "state n counts the inc calls whose result was kept, once each")
	paid, err := runtime.StateOf[int](res, "paid")
	require.NoError(t, err)
	assert.Equal(t, 10*ok("p1"), paid)
	for id, frag := range map[string]string{"f1": "no luck", "b1": "panicked", "s1": "did not finish within"} {
		if inv.get(id) == 1 && !strings.Contains(results[id].Content, "interrupted") {
			assert.Contains(t, results[id].Content, frag, "call %s", id)
		}
	}
}
