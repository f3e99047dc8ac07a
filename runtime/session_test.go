package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/snapshots"
)

// resumable is a prompt with state, a once-effect and two tools, one
// idempotent, counting how often each runs.
type resumable struct {
	onceRuns, aRuns, bRuns atomic.Int32
}

func (rp *resumable) fn(p *prompt.Prompt) error {
	n, setN := prompt.State(p, "n", 0)
	p.DefSystem("role", "You add.")
	p.Def("n", fmt.Sprint(n))
	prompt.DefTool(p, "a", "add one", func(ctx context.Context, _ struct{}) (int, error) {
		rp.aRuns.Add(1)
		setN.Update(ctx, func(v int) int { return v + 1 })
		return n + 1, nil
	})
	prompt.DefTool(p, "b", "look up", func(ctx context.Context, _ struct{}) (string, error) {
		rp.bRuns.Add(1)
		return "looked up " + prompt.CallID(ctx), nil
	}, prompt.Idempotent())
	p.Effect(effects.Once, func(ctx context.Context, s *effects.Step) error {
		rp.onceRuns.Add(1)
		return nil
	})
	p.User("add twice")
	return nil
}

func script() []snapshots.Reply {
	return []snapshots.Reply{
		snapshots.CallTools(snapshots.Call{ID: "c1", Name: "a"}),
		snapshots.CallTools(snapshots.Call{ID: "c2", Name: "a"}, snapshots.Call{ID: "c3", Name: "b"}),
		snapshots.Text("done"),
	}
}

// failingStore fails the first Save for which fail reports true and every
// Save after it, as a crash at that point would.
type failingStore struct {
	session.Store
	fail   func(cp *session.Checkpoint) bool
	failed bool
}

var errCrash = errors.New("simulated crash")

func (s *failingStore) Save(ctx context.Context, cp *session.Checkpoint) error {
	if s.failed || s.fail(cp) {
		s.failed = true
		return errCrash
	}
	return s.Store.Save(ctx, cp)
}

func TestResumeAfterModelFailureMatchesUninterruptedRun(t *testing.T) {
	ctx := context.Background()
	var plain resumable
	want, err := runtime.Run(ctx, snapshots.Script(script()...), plain.fn, runtime.Config{})
	require.NoError(t, err)

	store := session.NewMemory()
	cfg := runtime.Config{Store: store, SessionID: "s1"}
	var rp resumable
	first := script()
	first[1] = snapshots.Fail(&llm.ModelError{StatusCode: 503, Message: "down"})
	_, err = runtime.Run(ctx, snapshots.Script(first...), rp.fn, cfg)
	require.Error(t, err, "first run: want the model failure")
	r, err := runtime.Resume(ctx, snapshots.Script(script()[1:]...), rp.fn, cfg)
	require.NoError(t, err)
	step, ok := r.ResumedAt()
	require.True(t, ok, "ResumedAt: ok")
	require.Equal(t, 1, step, "ResumedAt: step")
	got, err := r.Run(ctx)
	require.NoError(t, err)
	assert.Empty(t, cmp.Diff(want.Transcript, got.Transcript), "transcript mismatch (-want +got)")
	n, _ := prompt.GetState[int](context.Background(), r.Prompt(), "n")
	assert.Equal(t, 2, n, "state n")
	assert.Equal(t, int32(1), rp.onceRuns.Load(), "runs of the once-effect across the resume")
	assert.Equal(t, int32(2), rp.aRuns.Load(), "runs of tool a, want one per call")
}

func TestResumeInterruptedToolCalls(t *testing.T) {
	ctx := context.Background()
	mem := session.NewMemory()
	// Crash when the second of the two calls of step 1 completes: the first
	// one's result is saved, the second one's is lost.
	store := &failingStore{Store: mem, fail: func(cp *session.Checkpoint) bool {
		return cp.Pending != nil && cp.Step == 1 && len(cp.Pending.Results) == 2
	}}
	var rp resumable
	_, err := runtime.Run(ctx, snapshots.Script(script()...), rp.fn, runtime.Config{Store: store, SessionID: "s2"})
	require.ErrorIs(t, err, errCrash, "first run: want the simulated crash")
	cp, err := mem.Latest(ctx, "s2")
	require.NoError(t, err)
	require.NotNil(t, cp.Pending, "latest checkpoint has no pending step")
	require.Len(t, cp.Pending.Reply.ToolCalls, 2, "latest checkpoint's pending step: calls")
	aBefore, bBefore := rp.aRuns.Load(), rp.bRuns.Load()

	r, err := runtime.Resume(ctx, snapshots.Script(snapshots.Text("done")), rp.fn, runtime.Config{Store: mem, SessionID: "s2"})
	require.NoError(t, err)
	first, err := r.Next(ctx)
	require.NoError(t, err)
	require.True(t, first.Resumed, "first step after resume: Resumed")
	require.Equal(t, 1, first.Number, "first step after resume: Number")
	// Results become durable in call order, with their state changes: the
	// checkpoint holds the result of a (c2), or none if b finished first
	// and waited for a. A saved result is kept and its tool not run again;
	// of the calls left without a result, the idempotent tool b runs again
	// and a gets an "interrupted" result, and its state change is not kept.
	var saved *defs.ToolResult
	switch len(cp.Pending.Results) {
	case 0:
	case 1:
		saved = &cp.Pending.Results[0]
		require.Equal(t, "c2", saved.CallID, "saved result %+v, want c2's: results are saved in call order", *saved)
	default:
		require.Failf(t, "too many saved results", "latest checkpoint holds %d results, want at most 1", len(cp.Pending.Results))
	}
	for _, res := range first.ToolResults {
		switch {
		case saved != nil && res.CallID == saved.CallID:
			assert.Empty(t, cmp.Diff(*saved, res), "saved result changed (-want +got)")
		case res.Name == "a":
			// An unfinished non-idempotent call: an interrupted error result.
			assert.True(t, res.IsError, "unfinished non-idempotent call: IsError")
			assert.Contains(t, res.Content, "interrupted", "unfinished non-idempotent call")
			assert.Empty(t, cmp.Diff([]string{res.CallID}, first.Interrupted), "Interrupted mismatch (-want +got)")
		case res.Name == "b":
			// An idempotent call is run again.
			assert.False(t, res.IsError, "idempotent call: IsError")
			assert.Equal(t, "looked up "+res.CallID, res.Content, "idempotent call")
		}
	}
	aAfter, bAfter := rp.aRuns.Load()-aBefore, rp.bRuns.Load()-bBefore
	assert.Equal(t, int32(0), aAfter, "runs of a after resume")
	assert.Equal(t, int32(1), bAfter, "runs of b after resume")
	wantN := 1 // step 0's a; step 1's a was interrupted and its change lost with its result
	if saved != nil {
		wantN = 2
	}
	n, _ := prompt.GetState[int](context.Background(), r.Prompt(), "n")
	assert.Equal(t, wantN, n, "state n after the resumed step")
	res, err := r.Run(ctx)
	require.NoError(t, err)
	assert.Equal(t, "done", res.Text, "final text")
	assert.NoError(t, runtime.ValidateMessages(r.Transcript()), "resumed transcript is invalid")
}

func TestResumeUnknownSession(t *testing.T) {
	_, err := runtime.Resume(context.Background(), snapshots.Script(), (&resumable{}).fn,
		runtime.Config{Store: session.NewMemory(), SessionID: "nope"})
	require.ErrorIs(t, err, session.ErrNotFound, "Resume of an unknown session")
	_, err = runtime.Resume(context.Background(), snapshots.Script(), (&resumable{}).fn, runtime.Config{})
	require.ErrorIs(t, err, runtime.ErrNoStore, "Resume without a store")
}

func TestResumePendingKeepsMessagesDeclaredLater(t *testing.T) {
	ctx := context.Background()
	fn := func(p *prompt.Prompt) error {
		phase, setPhase := prompt.State(p, "phase", 1)
		prompt.DefTool(p, "advance", "go to phase two", func(ctx context.Context, _ struct{}) (string, error) {
			setPhase.Set(ctx, 2)
			return "advanced", nil
		})
		p.User("phase one")
		if phase == 2 {
			p.User("phase two: wrap up")
		}
		return nil
	}
	script := func() *snapshots.Model {
		return snapshots.Script(snapshots.CallTools(snapshots.Call{ID: "a1", Name: "advance"}), snapshots.Text("done"))
	}
	want, err := runtime.Run(ctx, script(), fn, runtime.Config{})
	require.NoError(t, err)

	mem := session.NewMemory()
	// Crash at the end of step 0, after the tool's result was saved.
	store := &failingStore{Store: mem, fail: func(cp *session.Checkpoint) bool { return cp.Pending == nil && cp.Step == 1 }}
	_, err = runtime.Run(ctx, script(), fn, runtime.Config{Store: store, SessionID: "p"})
	require.ErrorIs(t, err, errCrash, "first run: want the simulated crash")
	r, err := runtime.Resume(ctx, snapshots.Script(snapshots.Text("done")), fn, runtime.Config{Store: mem, SessionID: "p"})
	require.NoError(t, err)
	got, err := r.Run(ctx)
	require.NoError(t, err)
	assert.Empty(t, cmp.Diff(want.Transcript, got.Transcript), "transcript mismatch (-want +got)")
}

func TestResumeDoesNotRunToolsTheStepDidNotOffer(t *testing.T) {
	ctx := context.Background()
	var runs atomic.Int32
	fn := func(p *prompt.Prompt) error {
		h := prompt.DefTool(p, "again", "idempotent but disabled at step 0", func(ctx context.Context, _ struct{}) (string, error) {
			runs.Add(1)
			return "ran", nil
		}, prompt.Idempotent())
		p.Effect(effects.Always, func(ctx context.Context, s *effects.Step) error {
			if s.Number == 0 {
				h.Disable()
			}
			return nil
		})
		p.User("go")
		return nil
	}
	mem := session.NewMemory()
	store := &failingStore{Store: mem, fail: func(cp *session.Checkpoint) bool { return cp.Pending != nil && len(cp.Pending.Results) == 1 }}
	m := snapshots.Script(snapshots.CallTools(snapshots.Call{ID: "x", Name: "again"}))
	_, err := runtime.Run(ctx, m, fn, runtime.Config{Store: store, SessionID: "o"})
	require.ErrorIs(t, err, errCrash, "first run: want the simulated crash")
	r, err := runtime.Resume(ctx, snapshots.Script(snapshots.Text("done")), fn, runtime.Config{Store: mem, SessionID: "o"})
	require.NoError(t, err)
	s, err := r.Next(ctx)
	require.NoError(t, err)
	assert.Equal(t, int32(0), runs.Load(), "runs after resume of a tool the step did not offer")
	// The refusal a disabled tool gets.
	res := s.ToolResults[0]
	assert.True(t, res.IsError, "result of the tool not offered: IsError")
	assert.Contains(t, res.Content, "disabled", "result of the tool not offered")
}

// TestRewritesStoreOnlyTheChangedTail runs 60 steps on a store while an
// effect rewrites the newest tool result after every reply (as the default
// trimming does): each rewrite is a new generation, and the store keeps
// only the changed messages, not a copy of the transcript per generation.
func TestRewritesStoreOnlyTheChangedTail(t *testing.T) {
	ctx := context.Background()
	fn := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "read", "read", func(ctx context.Context, _ struct{}) (string, error) {
			return strings.Repeat("content ", 50), nil
		})
		p.Effect(effects.Always, func(ctx context.Context, s *effects.Step) error {
			msgs := slices.Clone(s.Transcript())
			for i := len(msgs) - 1; i >= 0; i-- {
				if msgs[i].Role == defs.RoleTool && msgs[i].Meta["trimmed"] == "" {
					msgs[i].Content, msgs[i].Meta = "trimmed", map[string]string{"trimmed": "1"}
					s.CommitMessages(msgs)
					break
				}
			}
			return nil
		}, effects.InPhase(effects.AfterReply))
		p.User("read a lot")
		return nil
	}
	var replies []snapshots.Reply
	for i := range 59 {
		replies = append(replies, snapshots.CallTools(snapshots.Call{ID: fmt.Sprintf("c%d", i), Name: "read"}))
	}
	replies = append(replies, snapshots.Text("done"))
	mem := session.NewMemory()
	cfg := runtime.Config{Store: mem, SessionID: "tail"}
	res, err := runtime.Run(ctx, snapshots.Script(replies...), fn, cfg)
	require.NoError(t, err)
	rows, err := mem.Rows(ctx, "tail")
	require.NoError(t, err)
	assert.LessOrEqual(t, rows, 3*len(res.Transcript), "message rows stored for a transcript of %d messages after 59 rewrites: rewrites copy the transcript", len(res.Transcript))
	cp, err := mem.Latest(ctx, "tail")
	require.NoError(t, err)
	assert.Empty(t, cmp.Diff(res.Transcript, cp.Transcript, cmpopts.EquateEmpty()), "stored transcript mismatch (-want +got)")
}
