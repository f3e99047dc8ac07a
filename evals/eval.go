package evals

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	goruntime "runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reprompt/reprompt/evals/check"
	"github.com/reprompt/reprompt/evals/internal/hotpath"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
)

// ModelFunc returns the model of one run: run (from 0) of the case named
// name. It is called concurrently, from the goroutines that run the cases.
// A scripted model (snapshots.Script) or a replayed recording answers one
// run only, so each run needs its own; see Recordings.
type ModelFunc func(name string, run int) (llm.Model, error)

// Budget bounds a whole eval. The zero Budget bounds nothing.
type Budget struct {
	// Tokens bounds the tokens of every model call (llm.Usage.Total), the
	// judges' included; Cost their cost in US dollars, at Config.Pricing
	// (and each check.Judge's). Once either is reached no new run starts; the
	// runs under way finish and are measured, so an eval may go over by
	// at most Concurrency runs.
	Tokens int
	Cost   float64
	// Time bounds the eval's wall time. At the deadline the runs under way
	// are cancelled and left out of the figures (they were not measured
	// to their end).
	Time time.Duration
}

// Eval measures a prompt over a dataset: every case runs K times, each run
// is checked, and the figures of each case and of all are reported.
//
// An Eval is configured by its fields; the zero value of each is
// documented. It must not be changed while it runs.
type Eval[In, Out any] struct {
	// Name names the eval in its report.
	Name string
	// Cases are the dataset (see Load).
	Cases []Case[In, Out]
	// Prompt builds the prompt function under test from a case's input.
	// It is called once a run, concurrently.
	Prompt func(in In) prompt.Func
	// Model is the model of every run: it must be safe for concurrent
	// use. Models, if set, gives each run its own instead.
	Model  llm.Model
	Models ModelFunc
	// Config configures every run (runtime.Config): step limit, Pricing
	// for the cost figures, output mode. Store and SessionID must be
	// empty: the runs are not sessions.
	Config runtime.Config
	// Checks are run on every run, before each case's own.
	Checks []check.Check
	// K is how many times each case runs; zero means 1.
	K int
	// PassK is the k of the pass@k and pass^k figures, at most K; zero
	// means K.
	PassK int
	// Concurrency bounds the runs under way at once; zero means
	// GOMAXPROCS. At 1 the runs are made on the goroutine that called Run,
	// one after the other, with no goroutine of the eval's own.
	Concurrency int
	// Budget bounds the eval: see Budget and Report.Stopped.
	Budget Budget
	// Decide, if set, decides the tool calls a run pauses for
	// (prompt.NeedsApproval), as snapshots.Decide does, until the run
	// ends. Nil leaves a run paused at its first pause: it ends there, and
	// check.ApprovalAsked can check it.
	Decide func(call runtime.PendingApproval) (approve bool, reason string)
	// Goldens has a report written to a writer (Run) keep the text of
	// each failing step, as golden files show it (check.Failure.Golden).
	// Off, its failures name their check, step and reason only, and the
	// text is not made: a result file stays the size of its figures and
	// failures, not of a prompt for every failure, and the eval's own work
	// stays small beside its runs' (docs/performance.md). A report kept
	// in memory (Run with a nil writer) and Test's (whose logs show the
	// steps) always keep them; so does "reprompt eval run", whose report
	// shows the step a run failed at.
	Goldens bool
	// OnCase, if set, is called with each case's result as soon as the
	// case and every case before it have completed (at Concurrency 1,
	// eight cases at a time), in dataset order, on the goroutine that
	// called Run: a progress report. The result, its runs included, is
	// the callback's only during the call.
	OnCase func(*CaseResult)
}

// RunResult is one run of a case, as a report keeps it.
type RunResult struct {
	// Run is the run's number, from 0.
	Run int `json:"run"`
	// Pass reports that the run passed every check.
	Pass bool `json:"pass"`
	// Steps is the number of model calls; Usage their usage, Cost their
	// price at Config.Pricing, LatencyMS the run's wall time.
	Steps     int       `json:"steps"`
	Usage     llm.Usage `json:"usage"`
	Cost      float64   `json:"cost_usd,omitzero"`
	LatencyMS float64   `json:"latency_ms"`
	// Output is the run's answer: its typed answer (JSON), or its final
	// text as a JSON string; nil when it has none.
	Output json.RawMessage `json:"output,omitempty"`
	// Error is the error the run ended with; "" if none.
	Error string `json:"error,omitempty"`
	// Failures are the checks that failed, in the order they ran.
	Failures []check.Failure `json:"failures,omitempty"`
	// Grades are the judges' verdicts, in the order they ran.
	Grades []check.Grade `json:"grades,omitempty"`
}

// CaseResult is a case's figures and, while they are held, its runs.
type CaseResult struct {
	Name    string  `json:"name"`
	Figures Figures `json:"figures"`
	// Runs are the case's runs measured, by run number. Report.Cases hold
	// them only when the report was not written to a file (see Run).
	Runs []RunResult `json:"runs,omitempty"`
}

// errBudget is the cause of the context that the time budget cancels.
var errBudget = errors.New("time budget reached")

// Run runs the eval: each case K times, at most Concurrency runs at once,
// each run checked as soon as it ends. It returns the report: the figures
// of each case, in dataset order, and overall.
//
// With w not nil the report is written to w as it goes, as the JSON object
// ReadReport reads: each case with its runs, in dataset order, as soon as
// it and the cases before it have completed (at Concurrency 1, eight
// cases at a time, which keeps the eval's own work off the runs' caches);
// the returned report's cases then hold their figures only, so that
// memory does not grow with the runs (but for the largest 5 % of each
// measure's values, for the overall 95th percentiles). With w nil they
// hold their runs too.
//
// A budget reached ends the eval cleanly: Report.Stopped says which, the
// cases not run have no runs, and the error is nil. A ctx cancelled ends it
// the same way (Stopped "cancelled") with ctx's error. Other errors are
// the eval's configuration, before any run, or w's.
func (e *Eval[In, Out]) Run(ctx context.Context, w io.Writer) (*Report, error) {
	if e.Prompt == nil {
		return nil, errors.New("eval: no Prompt")
	}
	if e.Model == nil && e.Models == nil {
		return nil, errors.New("eval: no Model or Models")
	}
	if e.Config.Store != nil || e.Config.SessionID != "" {
		return nil, errors.New("eval: Config.Store and Config.SessionID must be empty")
	}
	seen := make(map[string]bool, len(e.Cases))
	for i := range e.Cases {
		name := e.caseName(i)
		if seen[name] {
			return nil, fmt.Errorf("eval: two cases named %q", name)
		}
		seen[name] = true
	}
	k := max(e.K, 1)
	passK := e.PassK
	if passK <= 0 || passK > k {
		passK = k
	}
	conc := e.Concurrency
	if conc <= 0 {
		conc = goruntime.GOMAXPROCS(0)
	}

	rep := &Report{Version: ReportVersion, Eval: e.Name, K: k, PassK: passK, Started: time.Now().UTC()}
	out := newStream(w)
	if err := out.header(rep); err != nil {
		return nil, err
	}

	// A context of the eval's own only for a deadline: the runs derive
	// theirs from it, which costs more under a cancellable parent.
	runCtx := ctx
	if e.Budget.Time > 0 {
		var stop context.CancelFunc
		runCtx, stop = context.WithTimeoutCause(ctx, e.Budget.Time, errBudget)
		defer stop()
	}
	b := &budget{limit: e.Budget}

	// The caller's goroutine writes the cases in dataset order. With one
	// run at a time it makes the runs too, between its writes: no hand-off
	// to another goroutine, which costs more than the eval's own work on a
	// scripted model. Otherwise conc goroutines make them.
	overall := newOverall(len(e.Cases) * k)
	next := 0
	var werr error
	scratch := newMeasures(k) // the measures of the case written, emptied for each
	// The cases written keep their figures only, in memory without
	// pointers, which the garbage collector does not scan at each cycle
	// of the runs; their results are made at the end. Unwritten, they
	// keep their runs.
	var figs []Figures
	if w != nil {
		figs = make([]Figures, 0, len(e.Cases)) // made once: 136 B a case, not copied as it grows
	} else {
		rep.Cases = make([]CaseResult, 0, len(e.Cases))
	}
	flush := func(acc *caseAcc) {
		cr := caseResult(acc, e.caseName(next), passK, scratch, overall)
		if e.OnCase != nil {
			e.OnCase(&cr)
		}
		if werr == nil {
			werr = out.caseResult(&cr)
		}
		if w != nil {
			figs = append(figs, cr.Figures)
		} else {
			rep.Cases = append(rep.Cases, cr)
		}
		next++
	}
	stopped := func() bool { return b.stopped() != "" || runCtx.Err() != nil }
	s := hotpath.NewSched[RunResult](len(e.Cases), k, conc, w != nil, stopped, e.caseInfo)
	defer context.AfterFunc(runCtx, s.Wake)()
	// worker returns the function that makes the runs of one goroutine,
	// checked in one Trajectory.
	noGolden := w != nil && !e.Goldens
	worker := func() func(c, run int, info *caseInfo) (RunResult, bool) {
		tr := new(check.Trajectory)
		return func(c, run int, info *caseInfo) (RunResult, bool) {
			if stopped() {
				return RunResult{}, false
			}
			tr.Reset()
			tr.NoGolden = noGolden
			return e.runOne(runCtx, info.name, &e.Cases[c], run, info, b, tr)
		}
	}
	if conc == 1 {
		do := worker()
		for s.Work(do) {
			s.FlushReady(flush, false)
		}
		s.FlushReady(flush, true)
	} else {
		for range conc {
			go func() {
				do := worker()
				for s.Work(do) {
				}
				s.Done()
			}()
		}
		s.Collect(flush)
	}
	for next < len(e.Cases) { // the cases the eval stopped before
		flush(&caseAcc{})
	}
	if w != nil {
		rep.Cases = make([]CaseResult, len(figs))
		for i := range figs {
			rep.Cases[i] = CaseResult{Name: e.caseName(i), Figures: figs[i]}
		}
	}

	rep.Overall = overall.figures()
	measured := 0
	for _, c := range rep.Cases {
		if f := c.Figures; f.Runs > 0 {
			measured++
			rep.Overall.PassAt1 += f.PassAt1
			rep.Overall.PassAtK += f.PassAtK
			rep.Overall.PassHatK += f.PassHatK
		}
	}
	if measured > 0 {
		rep.Overall.PassAt1 /= float64(measured)
		rep.Overall.PassAtK /= float64(measured)
		rep.Overall.PassHatK /= float64(measured)
	}
	var err error
	switch {
	case ctx.Err() != nil:
		rep.Stopped, err = "cancelled", ctx.Err()
	case overall.runs == len(e.Cases)*k:
		// Every run was made: a budget reached by the last ones stopped
		// none.
	case b.stopped() != "":
		rep.Stopped = b.stopped()
	case errors.Is(context.Cause(runCtx), errBudget):
		rep.Stopped = "time budget"
	}
	rep.ElapsedMS = ms(time.Since(rep.Started))
	if werr == nil {
		werr = out.trailer(rep)
	}
	if werr != nil {
		return rep, fmt.Errorf("eval: write the report: %w", werr)
	}
	return rep, err
}

// caseAcc gathers a case's runs until they are all in.
type caseAcc = hotpath.Acc[RunResult, caseInfo]

// caseInfo is what each run of a case needs, made once a case.
type caseInfo struct {
	name            string
	checks          []check.Check // the eval's, the Expected's, the case's own
	input, expected any           // the case's, as check.Trajectory holds them
}

// caseResult returns a's case's result, its figures measured in m (emptied
// first) and its runs added to overall.
func caseResult(a *caseAcc, name string, k int, m *measures, overall *overall) CaseResult {
	byRun := func(x, y RunResult) int { return x.Run - y.Run }
	if !slices.IsSortedFunc(a.Runs, byRun) { // made out of order by concurrent goroutines
		slices.SortFunc(a.Runs, byRun)
	}
	m.reset()
	for i := range a.Runs {
		m.add(&a.Runs[i])
		overall.add(&a.Runs[i])
	}
	return CaseResult{Name: name, Figures: m.figures(k), Runs: a.Runs}
}

// budget counts what the runs used against Budget. Without a limit on
// tokens or cost it counts nothing: no lock a run.
type budget struct {
	limit  Budget
	mu     sync.Mutex
	tokens int
	cost   float64
	why    atomic.Pointer[string] // why no run starts any more; nil while they do
}

func (b *budget) add(u llm.Usage, cost float64) {
	if b.limit.Tokens <= 0 && b.limit.Cost <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tokens += u.Total()
	b.cost += cost
	var why string
	switch {
	case b.why.Load() != nil:
		return
	case b.limit.Tokens > 0 && b.tokens >= b.limit.Tokens:
		why = "tokens budget"
	case b.limit.Cost > 0 && b.cost >= b.limit.Cost:
		why = "cost budget"
	default:
		return
	}
	b.why.Store(&why)
}

func (b *budget) stopped() string {
	if why := b.why.Load(); why != nil {
		return *why
	}
	return ""
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// runOne makes run of case c and checks it; false when ctx (the time budget,
// the caller) cut it short.
func (e *Eval[In, Out]) runOne(ctx context.Context, name string, c *Case[In, Out], run int, info *caseInfo, b *budget, tr *check.Trajectory) (RunResult, bool) {
	rr := RunResult{Run: run}
	model := e.Model
	if e.Models != nil {
		m, err := e.Models(name, run)
		if err != nil {
			rr.Error = err.Error()
			rr.Failures = []check.Failure{{Check: "model", Step: -1, Reason: err.Error()}}
			return rr, true
		}
		model = m
	}
	start := time.Now()
	res, err := e.execute(ctx, model, e.Prompt(c.Input))
	latency := time.Since(start)
	if err != nil && ctx.Err() != nil {
		return rr, false // cut short by the time budget or the caller: not measured to its end
	}
	tr.Case, tr.Run, tr.Input, tr.Expected = name, run, info.input, info.expected
	tr.Result, tr.Err, tr.Pricing = res, err, e.Config.Pricing
	rr.Steps, rr.Usage, rr.Cost, rr.LatencyMS = res.Stats.Steps, res.Usage, res.Stats.Cost, ms(latency)
	rr.Output = tr.Answer()
	if err != nil {
		rr.Error = err.Error()
		rr.Failures = append(rr.Failures, *check.Apply(ctx, completed, tr))
	}
	for _, ch := range info.checks {
		if f := check.Apply(ctx, ch, tr); f != nil {
			rr.Failures = append(rr.Failures, *f)
		}
	}
	if ctx.Err() != nil {
		// Its checks (a judge's run) were cut short by the time budget or
		// the caller: under way at the stop, it is not measured either.
		return RunResult{Run: run}, false
	}
	rr.Grades = tr.Grades()
	rr.Pass = len(rr.Failures) == 0
	reportRun(ctx, name, run, rr.Pass, rr.Failures, rr.Grades, rr.Usage, rr.Cost, rr.LatencyMS) // Test's progress
	var ju llm.Usage
	jc := 0.0
	for _, g := range rr.Grades {
		ju = addUsage(ju, g.Usage)
		jc += g.Cost
	}
	b.add(addUsage(res.Usage, ju), res.Stats.Cost+jc)
	return rr, true
}

// caseName returns the name of case i: its Name, or "case-N" (from 1).
func (e *Eval[In, Out]) caseName(i int) string {
	if n := e.Cases[i].Name; n != "" {
		return n
	}
	return fmt.Sprintf("case-%d", i+1)
}

// caseInfo returns what each run of case i needs: its name, its checks (the eval's, the
// Expected's, the case's own), its input and expected output as a
// check.Trajectory holds them.
func (e *Eval[In, Out]) caseInfo(i int) caseInfo {
	c := &e.Cases[i]
	info := caseInfo{name: e.caseName(i), checks: e.Checks, input: c.Input}
	if c.Expected != nil {
		info.expected = *c.Expected
		info.checks = append(slices.Clip(info.checks), expected(*c.Expected))
	}
	info.checks = append(slices.Clip(info.checks), c.Checks...)
	return info
}

// expected is the check of a case's Expected.
func expected[Out any](want Out) check.Check {
	return check.CheckFunc("expected", check.OutputEquals(want).Check)
}

// completed is the check of every run, made first: it ended without an
// error.
var completed = check.Completed()

// execute runs fn against model to its end, deciding the pauses with
// e.Decide; the result holds every step.
func (e *Eval[In, Out]) execute(ctx context.Context, model llm.Model, fn prompt.Func) (*runtime.Result, error) {
	r := runtime.New(model, fn, e.Config)
	defer r.Close()
	res, err := r.Run(ctx)
	if res == nil {
		res = &runtime.Result{}
	}
	for err == nil && len(res.Awaiting) > 0 && e.Decide != nil {
		for _, call := range res.Awaiting {
			approve, reason := e.Decide(call)
			if approve {
				err = r.Approve(call.CallID)
			} else {
				err = r.Deny(call.CallID, reason)
			}
			if err != nil {
				return res, err
			}
		}
		steps := res.Steps
		var more *runtime.Result
		more, err = r.Run(ctx)
		if more == nil {
			break
		}
		res = more
		res.Steps = append(slices.Clip(steps), more.Steps...)
	}
	return res, err
}

func addUsage(a, b llm.Usage) llm.Usage {
	return llm.Usage{
		InputTokens: a.InputTokens + b.InputTokens, OutputTokens: a.OutputTokens + b.OutputTokens,
		CachedTokens: a.CachedTokens + b.CachedTokens, ReasoningTokens: a.ReasoningTokens + b.ReasoningTokens,
	}
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
