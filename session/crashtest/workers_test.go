package crashtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/internal/pgtest"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/session/postgres"
	"github.com/reprompt/reprompt/session/sqlite"
)

// workerStores opens the stores two worker processes would have on one
// database: each open returns a store of its own on the same data.
type workerStores struct {
	name string
	open func(t *testing.T) func(t *testing.T) session.Store
}

func workerBackends() []workerStores {
	return []workerStores{{
		name: "memory",
		open: func(t *testing.T) func(t *testing.T) session.Store {
			mem := session.NewMemory()
			return func(t *testing.T) session.Store { return mem }
		},
	}, {
		name: "sqlite",
		open: func(t *testing.T) func(t *testing.T) session.Store {
			path := filepath.Join(t.TempDir(), "sessions.db")
			return func(t *testing.T) session.Store {
				st, err := sqlite.Open(path)
				require.NoError(t, err)
				t.Cleanup(func() { st.Close() })
				return st
			}
		},
	}, {
		name: "postgres",
		open: func(t *testing.T) func(t *testing.T) session.Store {
			url := pgtest.URL(t)
			return func(t *testing.T) session.Store {
				st, err := postgres.Open(context.Background(), url)
				require.NoError(t, err)
				t.Cleanup(func() { st.Close() })
				return st
			}
		},
	}}
}

// barrierModel answers as model does. The first step asked for is
// answered once both workers have asked for it (or after 250ms): the
// workers race to save the step they both began.
type barrierModel struct {
	model
	mu    sync.Mutex
	first int
	asked int
	both  chan struct{}
}

func (b *barrierModel) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	b.mu.Lock()
	if b.both == nil {
		b.both, b.first = make(chan struct{}), req.Step
	}
	wait := req.Step == b.first
	if wait {
		b.asked++
		if b.asked == 2 {
			close(b.both)
		}
	}
	b.mu.Unlock()
	if wait {
		select {
		case <-b.both:
		case <-time.After(250 * time.Millisecond):
		}
	}
	return b.model.Generate(ctx, req)
}

// countingAgent is the crash test's agent whose tools count their runs by
// call id.
func countingAgent(l *ledger, runs *sync.Map) prompt.Func {
	inner := agent(l, false) // "mark" is declared below, counting its runs
	return func(p *prompt.Prompt) error {
		if err := inner(p); err != nil {
			return err
		}
		_, setMarked := prompt.State(p, "marked", []string{})
		prompt.DefTool(p, "mark", "mark the step", func(ctx context.Context, _ struct{}) (string, error) {
			n, _ := runs.LoadOrStore(prompt.CallID(ctx), new(atomic.Int32))
			n.(*atomic.Int32).Add(1)
			id := prompt.CallID(ctx)
			setMarked.Update(ctx, func(m []string) []string { return append(append([]string(nil), m...), id) })
			return "marked", nil
		})
		return nil
	}
}

// TestTwoWorkersResumeOneSession resumes one session in two workers at
// once, on one database, from a checkpoint at a step's start and from one
// in the middle of a step. Both begin the same step; exactly one goes on,
// and the other stops with an error matching *session.ConflictError at its
// first save, before it runs a tool that is not idempotent. The session is
// the winner's: its latest checkpoint follows every earlier one, and no
// call of "mark" ran twice.
func TestTwoWorkersResumeOneSession(t *testing.T) {
	for _, b := range workerBackends() {
		for _, pending := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/pending=%t", b.name, pending), func(t *testing.T) {
				ctx := context.Background()
				open := b.open(t)
				id := pgtest.Name("workers_")
				first := open(t)
				t.Cleanup(func() { first.Delete(context.Background(), id) })
				dir := t.TempDir()
				l := newLedger(dir)
				var runs sync.Map
				fn := countingAgent(l, &runs)
				// The first run stops at step 3: at its start, or at the first
				// save of a call's result of the step (calls that finish
				// together share a save, so it may hold more than one: a
				// loaded machine finishes them together at times).
				crashed := &stopStore{Store: first, stop: func(cp *session.Checkpoint) bool {
					if pending {
						return cp.Step == 3 && cp.Pending != nil && len(cp.Pending.Results) >= 1
					}
					return cp.Step == 3 && cp.Pending != nil
				}}
				_, err := runtime.New(model{mark: true}, fn, runtime.Config{Store: crashed, SessionID: id, MaxSteps: steps + 5}).Run(ctx)
				require.ErrorIs(t, err, errStopped)
				before, err := first.Latest(ctx, id)
				require.NoError(t, err)
				require.Equal(t, pending, before.Pending != nil)

				bm := &barrierModel{model: model{mark: true}}
				type result struct {
					res *runtime.Result
					err error
				}
				out := make([]result, 2)
				var wg sync.WaitGroup
				// Both load the same checkpoint before either runs.
				var loaded sync.WaitGroup
				loaded.Add(2)
				for w := range 2 {
					st := open(t)
					wg.Go(func() {
						r, err := runtime.Resume(ctx, bm, fn, runtime.Config{Store: st, SessionID: id, MaxSteps: steps + 5})
						loaded.Done()
						if err != nil {
							out[w].err = err
							return
						}
						loaded.Wait()
						out[w].res, out[w].err = r.Run(ctx)
					})
				}
				wg.Wait()
				var won *runtime.Result
				conflicts := 0
				for _, o := range out {
					if o.err == nil {
						won = o.res
						continue
					}
					_, ok := errors.AsType[*session.ConflictError](o.err)
					assert.True(t, ok, "the loser's error %v is not a *session.ConflictError", o.err)
					conflicts++
				}
				require.NotNil(t, won, "no worker finished: %v, %v", out[0].err, out[1].err)
				require.Equal(t, 1, conflicts)

				latest, err := first.Latest(ctx, id)
				require.NoError(t, err)
				assert.True(t, latest.Done)
				require.NoError(t, runtime.ValidateMessages(latest.Transcript))
				wantTr, err := json.Marshal(won.Transcript)
				require.NoError(t, err)
				gotTr, err := json.Marshal(latest.Transcript)
				require.NoError(t, err)
				assert.JSONEq(t, string(wantTr), string(gotTr), "the stored session is the winner's")
				// Every checkpoint of the session extends the one before it.
				prev := before.Transcript
				for step := before.Step + 1; step <= latest.Step; step++ {
					cp, err := first.AtStep(ctx, id, step)
					require.NoError(t, err)
					require.GreaterOrEqual(t, len(cp.Transcript), len(prev))
					prevJSON, _ := json.Marshal(prev)
					gotJSON, _ := json.Marshal(cp.Transcript[:len(prev)])
					require.JSONEq(t, string(prevJSON), string(gotJSON), "checkpoint of step %d forks from the one before", step)
					prev = cp.Transcript
				}
				runs.Range(func(k, v any) bool {
					assert.LessOrEqual(t, v.(*atomic.Int32).Load(), int32(1), "mark call %s ran more than once", k)
					return true
				})
				var marked []string
				for _, m := range latest.Transcript {
					if m.Role == defs.RoleTool && m.Name == "mark" && !m.IsError {
						marked = append(marked, m.ToolCallID)
					}
				}
				var state struct{ Marked []string }
				require.NoError(t, json.Unmarshal(latest.State, &state))
				assert.Equal(t, marked, state.Marked, "the marks in the state are those of the results kept")
			})
		}
	}
}

var errStopped = errors.New("stopped")

// stopStore fails the first Save for which stop reports true, and every
// Save after it.
type stopStore struct {
	session.Store
	stop    func(cp *session.Checkpoint) bool
	mu      sync.Mutex
	stopped bool
}

func (s *stopStore) Save(ctx context.Context, cp *session.Checkpoint) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped || s.stop(cp) {
		s.stopped = true
		return errStopped
	}
	return s.Store.Save(ctx, cp)
}
