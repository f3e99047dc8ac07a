package evals_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/reprompt/reprompt/evals"
	"github.com/reprompt/reprompt/evals/check"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mistakes are the scripted runs' known mistakes: the figures below are
// computed by hand from them.
var mistakes = map[string][]mistake{
	"issue-2": {right, wrongPriority, right, wrongPriority},
	"issue-3": {noRead},
	"issue-4": {wrongPriority, noRead, badRead, wrongPriority},
}

func knownEval(conc int) *evals.Eval[issue, triage] {
	cs := cases(4)
	return &evals.Eval[issue, triage]{
		Name:        "triage",
		Cases:       cs,
		Prompt:      triageAgent,
		Models:      scripted(cs, mistakes),
		Checks:      []check.Check{check.Called("read_issue", nil), check.NoToolError()},
		K:           4,
		PassK:       2,
		Concurrency: conc,
	}
}

type passes struct {
	Passed                     int
	PassAt1, PassAtK, PassHatK float64
}

func TestFiguresByHand(t *testing.T) {
	rep, err := knownEval(3).Run(t.Context(), nil)
	require.NoError(t, err)
	// n = 4 runs a case, k = 2: pass@2 = 1 − C(4−c, 2)/C(4, 2), pass^2 =
	// C(c, 2)/C(4, 2), C(4, 2) = 6.
	want := map[string]passes{
		"issue-1": {4, 1, 1, 1},                 // no mistake
		"issue-2": {2, 0.5, 1 - 1.0/6, 1.0 / 6}, // two wrong priorities
		"issue-3": {3, 0.75, 1, 3.0 / 6},        // one answer without reading
		"issue-4": {0, 0, 0, 0},                 // a mistake every run
	}
	got := map[string]passes{}
	var names []string
	for _, c := range rep.Cases {
		names = append(names, c.Name)
		got[c.Name] = passes{c.Figures.Passed, c.Figures.PassAt1, c.Figures.PassAtK, c.Figures.PassHatK}
		assert.Equal(t, 4, c.Figures.Runs, "%s: runs", c.Name)
	}
	assert.Empty(t, cmp.Diff(want, got, cmpApprox), "figures per case (-want +got)")
	assert.Equal(t, []string{"issue-1", "issue-2", "issue-3", "issue-4"}, names, "dataset order")
	o := rep.Overall
	assert.InDelta(t, (1+0.5+0.75+0)/4, o.PassAt1, 1e-9, "overall pass@1")
	assert.InDelta(t, (1+5.0/6+1+0)/4, o.PassAtK, 1e-9, "overall pass@2")
	assert.InDelta(t, (1+1.0/6+0.5+0)/4, o.PassHatK, 1e-9, "overall pass^2")
	assert.Equal(t, 16, o.Runs, "overall runs")
	assert.Equal(t, 9, o.Passed, "overall passed")

	// issue-4's runs take 2, 1, 3 and 2 steps: mean 2, p95 (nearest rank,
	// the 4th of 4) 3.
	f4 := rep.Case("issue-4").Figures
	assert.Equal(t, evals.Stat{Mean: 2, P95: 3}, f4.Steps, "issue-4 steps")
	assert.Empty(t, rep.Stopped, "Stopped")
}

var cmpApprox = cmp.Comparer(func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 })

func TestFailuresShowTheStep(t *testing.T) {
	rep, err := knownEval(2).Run(t.Context(), nil)
	require.NoError(t, err)
	runs := rep.Case("issue-4").Runs
	require.Len(t, runs, 4)

	// run 0: a wrong priority, at the step of the answer.
	require.Len(t, runs[0].Failures, 1, "run 0: %v", runs[0].Failures)
	f := runs[0].Failures[0]
	assert.Equal(t, "expected", f.Check)
	assert.Equal(t, 1, f.Step, "run 0: the step of the answer")
	assert.Equal(t, `answer {"priority":1,"label":"bug"}, want {"priority":4,"label":"bug"}`, f.Reason)
	assert.Contains(t, f.Golden, "-- step 1/answer --\n{\"priority\":1,\"label\":\"bug\"}\n", "run 0: the step's answer section")
	assert.NotContains(t, f.Golden, "-- step 0/", "run 0: only the failing step")

	// run 1: no read_issue call.
	require.Len(t, runs[1].Failures, 1, "run 1: %v", runs[1].Failures)
	assert.Equal(t, "called read_issue", runs[1].Failures[0].Check)
	assert.Equal(t, "step 0: read_issue was never called: no tool was", runs[1].Failures[0].Error())
	assert.Contains(t, runs[1].Failures[0].Golden, "-- step 0/system --\n<role>\nYou triage issues.\n</role>\n")

	// run 2: a tool error at step 0, shown with its results.
	require.Len(t, runs[2].Failures, 1, "run 2: %v", runs[2].Failures)
	f = runs[2].Failures[0]
	assert.Equal(t, "no tool error", f.Check)
	assert.Equal(t, 0, f.Step)
	assert.Contains(t, f.Golden, "-- step 0/results --\ncall_1 read_issue {\"number\":1004} (error)\n")
	t.Logf("a failure as a test shows it:\n%s", f.String())
}

func TestOrderStableWhateverTheConcurrency(t *testing.T) {
	outcome := func(rep *evals.Report) []string {
		var out []string
		for _, c := range rep.Cases {
			for _, r := range c.Runs {
				out = append(out, c.Name+" "+string(r.Output)+" "+boolText(r.Pass))
			}
		}
		return out
	}
	one, err := knownEval(1).Run(t.Context(), nil)
	require.NoError(t, err)
	many, err := knownEval(16).Run(t.Context(), nil)
	require.NoError(t, err)
	assert.Empty(t, cmp.Diff(outcome(one), outcome(many)), "runs by case and number (-want +got)")
}

func boolText(b bool) string {
	if b {
		return "pass"
	}
	return "fail"
}

func TestStreamedReport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "result.json")
	f, err := os.Create(path)
	require.NoError(t, err)
	var seen []string
	e := knownEval(2)
	e.OnCase = func(c *evals.CaseResult) {
		seen = append(seen, c.Name)
		assert.Len(t, c.Runs, 4, "OnCase %s: runs", c.Name)
	}
	rep, err := e.Run(t.Context(), f)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	assert.Equal(t, []string{"issue-1", "issue-2", "issue-3", "issue-4"}, seen, "OnCase order")
	for _, c := range rep.Cases {
		assert.Nil(t, c.Runs, "%s: runs are in the file, not in memory", c.Name)
	}
	back, err := evals.ReadReport(path)
	require.NoError(t, err)
	assert.Equal(t, rep.Overall, back.Overall, "overall figures read back")
	require.Len(t, back.Cases, 4)
	for i, c := range back.Cases {
		assert.Equal(t, rep.Cases[i].Figures, c.Figures, "%s: figures read back", c.Name)
		assert.Len(t, c.Runs, 4, "%s: runs in the file", c.Name)
	}
	f2 := back.Case("issue-2").Runs[1].Failures[0]
	assert.Equal(t, "expected", f2.Check, "a failure in the file")
	assert.Equal(t, 1, f2.Step, "its step")
	assert.Contains(t, f2.Reason, "want", "its reason")
	assert.Empty(t, f2.Golden, "its step's text: not made without Goldens")

	// With Goldens, the file has each failing step's text, the same as a
	// report kept in memory.
	mem, err := knownEval(2).Run(t.Context(), nil)
	require.NoError(t, err)
	want := mem.Case("issue-2").Runs[1].Failures[0].Golden
	require.Contains(t, want, "-- step 1/answer --", "the golden text of a report kept in memory")
	e = knownEval(2)
	e.Goldens = true
	var buf bytes.Buffer
	_, err = e.Run(t.Context(), &buf)
	require.NoError(t, err)
	withGoldens := filepath.Join(t.TempDir(), "goldens.json")
	require.NoError(t, os.WriteFile(withGoldens, buf.Bytes(), 0o644))
	back, err = evals.ReadReport(withGoldens)
	require.NoError(t, err)
	assert.Equal(t, want, back.Case("issue-2").Runs[1].Failures[0].Golden, "the step's text in the file, with Goldens")
}

// TestStreamedReportWriteError checks a writer that fails part of the
// way: the eval makes every run, and Run returns its figures with the
// writer's error.
func TestStreamedReportWriteError(t *testing.T) {
	e := benchEval(200, 2, 1) // about 120 kB of result: two chunks, and the trailer's
	w := &failingWriter{after: 70 << 10}
	rep, err := e.Run(t.Context(), w)
	require.ErrorIs(t, err, errDiskFull)
	assert.ErrorContains(t, err, "eval: write the report")
	require.NotNil(t, rep)
	assert.Equal(t, 400, rep.Overall.Runs, "runs made despite the writer")
	assert.Len(t, rep.Cases, 200)
	assert.Equal(t, 1, w.fails, "no write after the first failure")
}

var errDiskFull = errors.New("disk full")

// failingWriter fails once it has taken after bytes.
type failingWriter struct {
	after, n, fails int
}

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.n+len(p) > w.after {
		w.fails++
		return 0, errDiskFull
	}
	w.n += len(p)
	return len(p), nil
}

func TestTokensBudget(t *testing.T) {
	e := knownEval(1)
	e.Cases = cases(20)
	e.Models = scripted(e.Cases, nil)
	e.Budget.Tokens = 1 // reached by the first run
	rep, err := e.Run(t.Context(), nil)
	require.NoError(t, err)
	assert.Equal(t, "tokens budget", rep.Stopped)
	require.Len(t, rep.Cases, 20, "every case is listed")
	assert.Equal(t, 1, rep.Overall.Runs, "one run measured, then no new run")
	assert.Equal(t, 1, rep.Cases[0].Figures.Runs, "the run measured")
	assert.Equal(t, 0, rep.Cases[1].Figures.Runs, "a case not run")
	assert.InDelta(t, 1.0, rep.Overall.PassAt1, 1e-9, "overall pass@1 over the cases measured")
}

// TestBudgetReachedByTheLastRun checks that a budget reached by the last
// run, once every case ran K times, stopped nothing: Stopped is "".
func TestBudgetReachedByTheLastRun(t *testing.T) {
	for _, conc := range []int{1, 3} {
		e := knownEval(conc)
		rep, err := e.Run(t.Context(), nil)
		require.NoError(t, err)
		total := 0
		for _, c := range rep.Cases {
			for _, r := range c.Runs {
				total += r.Usage.Total()
			}
		}
		e.Budget.Tokens = total
		rep, err = e.Run(t.Context(), nil)
		require.NoError(t, err)
		assert.Equal(t, 16, rep.Overall.Runs, "concurrency %d: every run made", conc)
		assert.Empty(t, rep.Stopped, "concurrency %d: nothing stopped", conc)

		e.Budget.Tokens = total - 1 // reached by the last run too
		rep, err = e.Run(t.Context(), nil)
		require.NoError(t, err)
		assert.Empty(t, rep.Stopped, "concurrency %d: nothing stopped", conc)
		e.Budget.Tokens = total / 2
		rep, err = e.Run(t.Context(), nil)
		require.NoError(t, err)
		assert.Equal(t, "tokens budget", rep.Stopped, "concurrency %d: stopped half way", conc)
		assert.Less(t, rep.Overall.Runs, 16, "concurrency %d", conc)
	}
}

// blocking is a model that answers only when its context ends.
type blocking struct{}

func (blocking) Generate(ctx context.Context, _ *llm.Request) (*llm.Reply, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestTimeBudget(t *testing.T) {
	e := knownEval(2)
	e.Models = nil
	e.Model = blocking{}
	e.Budget.Time = 50 * time.Millisecond
	start := time.Now()
	rep, err := e.Run(t.Context(), nil)
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 5*time.Second, "stopped at the deadline")
	assert.Equal(t, "time budget", rep.Stopped)
	assert.Equal(t, 0, rep.Overall.Runs, "runs cut short are not measured")
	assert.Len(t, rep.Cases, 4)
}

func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	e := knownEval(2)
	e.Models = nil
	e.Model = blocking{}
	time.AfterFunc(20*time.Millisecond, cancel)
	rep, err := e.Run(ctx, nil)
	assert.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, rep)
	assert.Equal(t, "cancelled", rep.Stopped)
}

func TestConfigErrors(t *testing.T) {
	for name, e := range map[string]*evals.Eval[issue, triage]{
		"no prompt": {Model: blocking{}},
		"no model":  {Prompt: triageAgent},
		"same name": {Prompt: triageAgent, Model: blocking{}, Cases: []evals.Case[issue, triage]{{Name: "a"}, {Name: "a"}}},
		"store":     {Prompt: triageAgent, Model: blocking{}, Config: runtime.Config{SessionID: "x"}},
	} {
		_, err := e.Run(t.Context(), nil)
		assert.Error(t, err, name)
	}
}

type payArgs struct {
	Amount int `json:"amount"`
}

// payer pays with a tool that needs approval and counts what it paid.
func payer(amount int) prompt.Func {
	return func(p *prompt.Prompt) error {
		paid, setPaid := prompt.State(p, "paid", 0)
		prompt.DefTool(p, "pay", "Pay an amount.", func(ctx context.Context, a payArgs) (int, error) {
			setPaid.Update(ctx, func(n int) int { return n + a.Amount })
			return paid + a.Amount, nil
		}, prompt.NeedsApproval())
		p.User(fmt.Sprintf("Pay %d.", amount))
		return nil
	}
}

func TestApprovals(t *testing.T) {
	script := func(string, int) (llm.Model, error) {
		return snapshots.Script(snapshots.CallTool("pay", payArgs{Amount: 30}), snapshots.Text("Paid.")), nil
	}
	e := &evals.Eval[int, string]{
		Cases:  []evals.Case[int, string]{{Name: "pay", Input: 30, Expected: new("Paid.")}},
		Prompt: payer,
		Models: script,
		Checks: []check.Check{check.ApprovalAsked("pay"), check.StateEquals("paid", 30), check.CalledInOrder("pay")},
		Decide: func(runtime.PendingApproval) (bool, string) { return true, "" },
	}
	rep, err := e.Run(t.Context(), nil)
	require.NoError(t, err)
	r := rep.Cases[0].Runs[0]
	assert.True(t, r.Pass, "decided run: %v", r.Failures)
	assert.Equal(t, `"Paid."`, string(r.Output), "the text as the answer")

	// Undecided, the run ends paused: the approval was asked, nothing paid.
	e.Decide = nil
	rep, err = e.Run(t.Context(), nil)
	require.NoError(t, err)
	r = rep.Cases[0].Runs[0]
	require.Len(t, r.Failures, 2, "paused run: %v", r.Failures)
	assert.Equal(t, "state paid", r.Failures[0].Check)
	assert.Equal(t, "expected", r.Failures[1].Check)
	assert.Contains(t, r.Failures[0].Golden, "-- step 0/awaiting --\ncall_1 pay {\"amount\":30}\n", "the paused step")
}

func TestCheckFuncAndPanics(t *testing.T) {
	e := knownEval(1)
	e.Cases = e.Cases[:1]
	e.K = 1
	e.Checks = []check.Check{
		check.CheckFunc("plain error", func(context.Context, *check.Trajectory) error { return errors.New("not good") }),
		check.CheckFunc("panics", func(context.Context, *check.Trajectory) error { panic("oops") }),
		check.CheckFunc("at step 0", func(context.Context, *check.Trajectory) error {
			return &check.Failure{Step: 0, Reason: "looked at step 0"}
		}),
	}
	rep, err := e.Run(t.Context(), nil)
	require.NoError(t, err)
	fs := rep.Cases[0].Runs[0].Failures
	require.Len(t, fs, 3)
	assert.Equal(t, "step 1: not good", fs[0].Error(), "a plain error: the last step")
	assert.Equal(t, "step 1: check panicked: oops", fs[1].Error())
	assert.Equal(t, "panics", fs[1].Check)
	assert.Equal(t, "at step 0", fs[2].Check)
	assert.Contains(t, fs[2].Golden, "-- step 0/reply --", "a Failure's own step")
}

// TestCancelledWhileTheWindowIsFull cancels an eval whose first case is
// held by one run while the other goroutine has filled the window of cases
// under way: it waits for the first case, and wakes at the cancellation.
func TestCancelledWhileTheWindowIsFull(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	e := knownEval(2)
	e.Cases = cases(40)
	right := scripted(e.Cases, nil)
	var held atomic.Bool
	e.Models = func(name string, run int) (llm.Model, error) {
		if name == "issue-1" && run == 0 {
			held.Store(true)
			return blocking{}, nil
		}
		return right(name, run)
	}
	var written []string
	e.OnCase = func(c *evals.CaseResult) { written = append(written, c.Name) }
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	rep, err := e.Run(ctx, nil)
	assert.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, rep)
	assert.True(t, held.Load(), "the first case's run 0 held")
	assert.Less(t, time.Since(start), 5*time.Second, "woken at the cancellation")
	assert.Equal(t, "cancelled", rep.Stopped)
	require.Len(t, rep.Cases, 40, "every case is listed")
	assert.Equal(t, 3, rep.Cases[0].Figures.Runs, "issue-1: its held run cut short, the others measured")
	assert.LessOrEqual(t, rep.Overall.Runs, 3+3*4, "runs measured: the window holds 4 cases")
	assert.Len(t, written, 40, "OnCase for every case, in order")
	assert.Equal(t, "issue-1", written[0], "OnCase order")
}

// TestOnCasePanics checks that a panic in OnCase reaches the caller of
// Run as the panic it is (not a fatal error of the scheduler's lock), at
// any concurrency, and that the eval's goroutines end.
func TestOnCasePanics(t *testing.T) {
	for _, conc := range []int{1, 2} {
		before := goruntime.NumGoroutine()
		e := knownEval(conc)
		e.Cases = cases(40)
		e.Models = scripted(e.Cases, nil)
		e.OnCase = func(*evals.CaseResult) { panic("boom") }
		assert.PanicsWithValue(t, "boom", func() { _, _ = e.Run(t.Context(), nil) }, "concurrency %d", conc)
		for end := time.Now().Add(5 * time.Second); goruntime.NumGoroutine() > before && time.Now().Before(end); {
			time.Sleep(10 * time.Millisecond)
		}
		assert.LessOrEqual(t, goruntime.NumGoroutine(), before, "concurrency %d: the eval's goroutines end", conc)
	}
}

// TestMaxStepsAfterApprovals checks that MaxSteps shows step n, the first
// too many, in a run whose paused steps were decided: each has two
// records, its pause and its decision.
func TestMaxStepsAfterApprovals(t *testing.T) {
	script := func(string, int) (llm.Model, error) {
		pay := snapshots.CallTool("pay", payArgs{Amount: 30})
		return snapshots.Script(pay, pay, snapshots.Text("Paid.")), nil
	}
	e := &evals.Eval[int, string]{
		Cases:  []evals.Case[int, string]{{Name: "pay", Input: 30}},
		Prompt: payer,
		Models: script,
		Checks: []check.Check{check.MaxSteps(1), check.MaxSteps(2)},
		Decide: func(runtime.PendingApproval) (bool, string) { return true, "" },
	}
	rep, err := e.Run(t.Context(), nil)
	require.NoError(t, err)
	r := rep.Cases[0].Runs[0]
	require.Equal(t, 3, r.Steps)
	require.Len(t, r.Failures, 2, "%v", r.Failures)
	for i, n := range []int{1, 2} {
		f := r.Failures[i]
		assert.Equal(t, fmt.Sprintf("step %d: 3 steps, more than %d", n, n), f.Error(), "MaxSteps(%d)", n)
		assert.Contains(t, f.Golden, fmt.Sprintf("-- step %d/reply --", n), "MaxSteps(%d): the step shown", n)
		assert.NotContains(t, f.Golden, "decided", "MaxSteps(%d): not a decision's record", n)
	}
}
