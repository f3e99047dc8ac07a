// Package evalreport writes the HTML report of an eval's result file
// (package evals' Report): a table of cases × runs with a pass or fail chip
// per run, each run's failing checks with the step each failed at, as the
// run's golden file shows it, and, given a baseline, the comparison
// (evals.Compare): the cases worse, better and unsure, with their p-values.
// Given the pages of the runs' steps (Options.Steps), each run links to
// its own.
//
// The page is self-contained (its style inline, no script, nothing loaded)
// and made with html/template: case names, answers, reasons and golden
// text are untrusted, and are escaped where they land.
package evalreport

import (
	"bytes"
	_ "embed" // the page's template and style
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"

	"github.com/reprompt/reprompt/evals"
)

var (
	//go:embed assets/report.html
	pageHTML string
	//go:embed assets/report.css
	pageCSS string

	page = template.Must(template.New("report").Parse(pageHTML))
)

// Options configure HTML. The zero Options write a report without a
// comparison.
type Options struct {
	// Source names where the report was read from (its file), shown under
	// the title; "" shows nothing.
	Source string
	// Baseline, if not nil, is the report the result is compared with, and
	// Comparison that comparison (evals.Compare); BaseSource names the
	// baseline's file.
	Baseline   *evals.Report
	Comparison *evals.Comparison
	BaseSource string
	// Steps, if not nil, returns the address of the page of a run's
	// steps (the step viewer's), relative to the report's, for run (its
	// number) of the case rep.Cases[c]; "" for none. Each run with one
	// links to it.
	Steps func(c, run int) string
}

// HTML writes rep as one self-contained HTML page. Each case has the id
// "c<i>" (from 1, in dataset order) and each of its runs "c<i>-r<n>" (n
// the run's number, from 0): a chip of the table links to its run, and
// another page may link to either. A k above MaxK is an error.
func HTML(w io.Writer, rep *evals.Report, opts Options) error {
	if rep.K > MaxK {
		return fmt.Errorf("k %d: more runs a case than the page shows (%d)", rep.K, MaxK)
	}
	v := view(rep, opts)
	var b bytes.Buffer
	if err := page.Execute(&b, v); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

// MaxK is the most runs a case the page shows, a chip each: a result
// file's k above it (a file corrupt or made to exhaust the memory of what
// renders it) is an error.
const MaxK = 10_000

// pageView is what the template shows.
type pageView struct {
	Title, Source, Started, Elapsed string
	CSS                             template.CSS
	Rep                             *evals.Report
	Cases                           []caseView
	Overall                         figures
	Cmp                             *cmpView
	BaseSource                      string
}

type caseView struct {
	ID, Name string
	F        figures
	Chips    []chip
	Runs     []runView
	Change   *changeView
}

// chip is a run's cell in the table: ID "" for a run the eval did not
// make (a budget stopped it).
type chip struct {
	ID, Class, Title string
	N                int
}

type runView struct {
	ID       string
	Steps    string // the address of the page of its steps, "" if none
	N        int
	Pass     bool
	Stats    string
	Output   string
	Error    string
	Failures []failureView
	Grades   []gradeView
}

type failureView struct {
	Check, Reason, Golden string
	Step                  int
}

type gradeView struct {
	Check, Reason, Error string
	Score                int
}

// figures are a case's figures, formatted as the table shows them.
type figures struct {
	Passed, PassAt1, PassAtK, PassHatK, Steps, Input, CacheRead, Cost, Latency string
}

type cmpView struct {
	*evals.Comparison
	Base        *evals.Report
	BaseStarted string
	Verdict     string
	Changes     []changeView
}

// changeView is a case that changed against the baseline: Kind is worse,
// better, unsure, added or removed.
type changeView struct {
	Kind, ID, Case, Base, Now, P string
}

func view(rep *evals.Report, opts Options) *pageView {
	v := &pageView{
		Title: rep.Eval, Source: opts.Source, CSS: template.CSS(pageCSS), Rep: rep,
		Started: rep.Started.UTC().Format(time.DateTime + " UTC"),
		Elapsed: duration(rep.ElapsedMS), Overall: figuresOf(rep.Overall), BaseSource: opts.BaseSource,
	}
	if v.Title == "" {
		v.Title = "eval"
	}
	ids := map[string]string{}
	byName := map[string]*caseView{}
	for i := range rep.Cases {
		c := &rep.Cases[i]
		cv := caseView{ID: fmt.Sprintf("c%d", i+1), Name: c.Name, F: figuresOf(c.Figures)}
		ids[c.Name] = cv.ID
		have := map[int]*evals.RunResult{}
		for j := range c.Runs {
			r := &c.Runs[j]
			have[r.Run] = r
			rv := runOf(cv.ID, r)
			if opts.Steps != nil {
				rv.Steps = opts.Steps(i, r.Run)
			}
			cv.Runs = append(cv.Runs, rv)
		}
		for n := range max(rep.K, len(c.Runs)) {
			r := have[n]
			if r == nil {
				cv.Chips = append(cv.Chips, chip{N: n})
				continue
			}
			ch := chip{ID: fmt.Sprintf("%s-r%d", cv.ID, n), N: n, Class: "pass", Title: fmt.Sprintf("run %d passed", n)}
			if !r.Pass {
				ch.Class = "fail"
				var why []string
				for _, f := range r.Failures {
					why = append(why, f.Check)
				}
				ch.Title = fmt.Sprintf("run %d failed: %s", n, strings.Join(why, ", "))
			}
			cv.Chips = append(cv.Chips, ch)
		}
		v.Cases = append(v.Cases, cv)
	}
	for i := range v.Cases {
		byName[v.Cases[i].Name] = &v.Cases[i]
	}
	if opts.Comparison == nil {
		return v
	}
	c := opts.Comparison
	cv := &cmpView{Comparison: c, Base: opts.Baseline}
	if cv.Base == nil {
		cv.Base = &evals.Report{}
	}
	cv.BaseStarted = cv.Base.Started.UTC().Format(time.DateTime + " UTC")
	if v.BaseSource == "" {
		v.BaseSource = "the baseline"
	}
	add := func(kind string, chs []evals.Change) {
		for _, ch := range chs {
			x := changeView{Kind: kind, ID: ids[ch.Case], Case: ch.Case,
				Base: fmt.Sprintf("%d/%d", ch.BasePassed, ch.BaseRuns), Now: fmt.Sprintf("%d/%d", ch.NowPassed, ch.NowRuns), P: fmt.Sprintf("%.3f", ch.P)}
			cv.Changes = append(cv.Changes, x)
			if cs := byName[ch.Case]; cs != nil {
				cs.Change = &x
			}
		}
	}
	add("worse", c.Worse)
	add("better", c.Better)
	add("unsure", c.Unsure)
	for _, n := range c.Added {
		x := changeView{Kind: "added", ID: ids[n], Case: n, Base: "–", Now: "", P: ""}
		if cs := byName[n]; cs != nil {
			x.Now = cs.F.Passed
			cs.Change = &x
		}
		cv.Changes = append(cv.Changes, x)
	}
	for _, n := range c.Removed {
		x := changeView{Kind: "removed", Case: n, Now: "–"}
		if b := cv.Base.Case(n); b != nil {
			x.Base = fmt.Sprintf("%d/%d", b.Figures.Passed, b.Figures.Runs)
		}
		cv.Changes = append(cv.Changes, x)
	}
	cv.Verdict = Verdict(c)
	v.Cmp = cv
	return v
}

// Verdict says in a sentence what the comparison c found: the cases
// worse, better and unsure, or that nothing changed.
func Verdict(c *evals.Comparison) string {
	if len(c.Worse)+len(c.Better)+len(c.Unsure)+len(c.Added)+len(c.Removed) == 0 {
		return "No case changed its pass rate."
	}
	var parts []string
	count := func(n int, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s %s", n, plural(n, "case", "cases"), what))
		}
	}
	count(len(c.Worse), "worse")
	count(len(c.Better), "better")
	count(len(c.Unsure), "changed without significance (unsure: run more to tell)")
	count(len(c.Added), "new")
	count(len(c.Removed), "no longer run")
	s := strings.Join(parts, ", ") + "."
	if c.Regressed() {
		s = "Regressed: " + s
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func runOf(caseID string, r *evals.RunResult) runView {
	rv := runView{ID: fmt.Sprintf("%s-r%d", caseID, r.Run), N: r.Run, Pass: r.Pass, Error: r.Error,
		Stats: fmt.Sprintf("%d %s, %d input tokens (%d cache read), %d output, $%.4f, %s", r.Steps, plural(r.Steps, "step", "steps"),
			r.Usage.InputTokens, r.Usage.CachedTokens, r.Usage.OutputTokens, r.Cost, duration(r.LatencyMS))}
	if len(r.Output) > 0 {
		var b bytes.Buffer
		if json.Indent(&b, r.Output, "", "  ") == nil {
			rv.Output = b.String()
		} else {
			rv.Output = string(r.Output)
		}
	}
	for _, f := range r.Failures {
		rv.Failures = append(rv.Failures, failureView{Check: f.Check, Reason: f.Reason, Golden: f.Golden, Step: f.Step})
	}
	for _, g := range r.Grades {
		rv.Grades = append(rv.Grades, gradeView{Check: g.Check, Reason: g.Reason, Error: g.Error, Score: g.Score})
	}
	return rv
}

func figuresOf(f evals.Figures) figures {
	pair := func(s evals.Stat, format string) string { return fmt.Sprintf(format+"/"+format, s.Mean, s.P95) }
	return figures{
		Passed: fmt.Sprintf("%d/%d", f.Passed, f.Runs), PassAt1: fmt.Sprintf("%.3f", f.PassAt1),
		PassAtK: fmt.Sprintf("%.3f", f.PassAtK), PassHatK: fmt.Sprintf("%.3f", f.PassHatK),
		Steps: pair(f.Steps, "%.1f"), Input: pair(f.InputTokens, "%.0f"), CacheRead: pair(f.CacheRead, "%.0f"),
		Cost: pair(f.Cost, "%.4f"), Latency: pair(f.LatencyMS, "%.1f"),
	}
}

// duration formats milliseconds for people: "850 ms", "12.3 s", "4m5s".
func duration(ms float64) string {
	switch {
	case ms < 1000:
		return fmt.Sprintf("%.0f ms", ms)
	case ms < 60_000:
		return fmt.Sprintf("%.1f s", ms/1000)
	}
	return time.Duration(ms * float64(time.Millisecond)).Round(time.Second).String()
}
