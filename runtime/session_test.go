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
	if err != nil {
		t.Fatal(err)
	}

	store := session.NewMemory()
	cfg := runtime.Config{Store: store, SessionID: "s1"}
	var rp resumable
	first := script()
	first[1] = snapshots.Fail(&llm.ModelError{StatusCode: 503, Message: "down"})
	if _, err := runtime.Run(ctx, snapshots.Script(first...), rp.fn, cfg); err == nil {
		t.Fatal("first run: want the model failure")
	}
	r, err := runtime.Resume(ctx, snapshots.Script(script()[1:]...), rp.fn, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if step, ok := r.ResumedAt(); !ok || step != 1 {
		t.Fatalf("ResumedAt = %d, %t; want 1, true", step, ok)
	}
	got, err := r.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.Transcript, got.Transcript); diff != "" {
		t.Errorf("transcript mismatch (-want +got):\n%s", diff)
	}
	if n, _ := prompt.GetState[int](context.Background(), r.Prompt(), "n"); n != 2 {
		t.Errorf("state n = %d, want 2", n)
	}
	if got := rp.onceRuns.Load(); got != 1 {
		t.Errorf("once-effect ran %d times across the resume, want 1", got)
	}
	if got := rp.aRuns.Load(); got != 2 {
		t.Errorf("tool a ran %d times, want 2 (once per call)", got)
	}
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
	if !errors.Is(err, errCrash) {
		t.Fatalf("first run: err = %v, want the simulated crash", err)
	}
	cp, err := mem.Latest(ctx, "s2")
	if err != nil {
		t.Fatal(err)
	}
	if cp.Pending == nil || len(cp.Pending.Reply.ToolCalls) != 2 {
		t.Fatalf("latest checkpoint has no pending step with two calls: %+v", cp.Pending)
	}
	aBefore, bBefore := rp.aRuns.Load(), rp.bRuns.Load()

	r, err := runtime.Resume(ctx, snapshots.Script(snapshots.Text("done")), rp.fn, runtime.Config{Store: mem, SessionID: "s2"})
	if err != nil {
		t.Fatal(err)
	}
	first, err := r.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !first.Resumed || first.Number != 1 {
		t.Fatalf("first step after resume: Resumed=%t Number=%d, want a resumed step 1", first.Resumed, first.Number)
	}
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
		if saved.CallID != "c2" {
			t.Fatalf("saved result %+v, want c2's: results are saved in call order", *saved)
		}
	default:
		t.Fatalf("latest checkpoint holds %d results, want at most 1", len(cp.Pending.Results))
	}
	for _, res := range first.ToolResults {
		switch {
		case saved != nil && res.CallID == saved.CallID:
			if diff := cmp.Diff(*saved, res); diff != "" {
				t.Errorf("saved result changed (-want +got):\n%s", diff)
			}
		case res.Name == "a":
			if !res.IsError || !strings.Contains(res.Content, "interrupted") {
				t.Errorf("unfinished non-idempotent call got %q, want an interrupted error result", res.Content)
			}
			if diff := cmp.Diff([]string{res.CallID}, first.Interrupted); diff != "" {
				t.Errorf("Interrupted mismatch (-want +got):\n%s", diff)
			}
		case res.Name == "b":
			if res.IsError || res.Content != "looked up "+res.CallID {
				t.Errorf("idempotent call got %q, want it run again", res.Content)
			}
		}
	}
	aAfter, bAfter := rp.aRuns.Load()-aBefore, rp.bRuns.Load()-bBefore
	if aAfter != 0 || bAfter != 1 {
		t.Errorf("after resume a ran %d times and b %d times, want 0 and 1", aAfter, bAfter)
	}
	wantN := 1 // step 0's a; step 1's a was interrupted and its change lost with its result
	if saved != nil {
		wantN = 2
	}
	if n, _ := prompt.GetState[int](context.Background(), r.Prompt(), "n"); n != wantN {
		t.Errorf("state n = %d after the resumed step, want %d", n, wantN)
	}
	res, err := r.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "done" {
		t.Errorf("final text %q", res.Text)
	}
	if err := runtime.ValidateMessages(r.Transcript()); err != nil {
		t.Errorf("resumed transcript is invalid: %v", err)
	}
}

func TestResumeUnknownSession(t *testing.T) {
	_, err := runtime.Resume(context.Background(), snapshots.Script(), (&resumable{}).fn,
		runtime.Config{Store: session.NewMemory(), SessionID: "nope"})
	if !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	if _, err := runtime.Resume(context.Background(), snapshots.Script(), (&resumable{}).fn, runtime.Config{}); !errors.Is(err, runtime.ErrNoStore) {
		t.Fatalf("err = %v, want ErrNoStore", err)
	}
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
	if err != nil {
		t.Fatal(err)
	}

	mem := session.NewMemory()
	// Crash at the end of step 0, after the tool's result was saved.
	store := &failingStore{Store: mem, fail: func(cp *session.Checkpoint) bool { return cp.Pending == nil && cp.Step == 1 }}
	if _, err := runtime.Run(ctx, script(), fn, runtime.Config{Store: store, SessionID: "p"}); !errors.Is(err, errCrash) {
		t.Fatalf("first run: %v, want the simulated crash", err)
	}
	r, err := runtime.Resume(ctx, snapshots.Script(snapshots.Text("done")), fn, runtime.Config{Store: mem, SessionID: "p"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.Transcript, got.Transcript); diff != "" {
		t.Errorf("transcript mismatch (-want +got):\n%s", diff)
	}
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
	if _, err := runtime.Run(ctx, m, fn, runtime.Config{Store: store, SessionID: "o"}); !errors.Is(err, errCrash) {
		t.Fatalf("first run: %v, want the simulated crash", err)
	}
	r, err := runtime.Resume(ctx, snapshots.Script(snapshots.Text("done")), fn, runtime.Config{Store: mem, SessionID: "o"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if runs.Load() != 0 {
		t.Errorf("a tool the step did not offer ran %d times after resume", runs.Load())
	}
	if res := s.ToolResults[0]; !res.IsError || !strings.Contains(res.Content, "disabled") {
		t.Errorf("result %q, want the refusal a disabled tool gets", res.Content)
	}
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
	if err != nil {
		t.Fatal(err)
	}
	rows, err := mem.Rows(ctx, "tail")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.Transcript); rows > 3*n {
		t.Errorf("%d message rows stored for a transcript of %d messages after 59 rewrites: rewrites copy the transcript", rows, n)
	}
	cp, err := mem.Latest(ctx, "tail")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(res.Transcript, cp.Transcript, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("stored transcript mismatch (-want +got):\n%s", diff)
	}
}
