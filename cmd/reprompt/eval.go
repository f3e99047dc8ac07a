package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/reprompt/reprompt/cmd/reprompt/internal/evalreport"
	"github.com/reprompt/reprompt/cmd/reprompt/internal/showtext"
	"github.com/reprompt/reprompt/evals"
)

// RegressionError is a result that a comparison with its baseline found
// worse: the cases in Worse (exit status 1).
type RegressionError struct {
	Baseline string
	Worse    []evals.Change
}

func (e *RegressionError) Error() string {
	names := make([]string, len(e.Worse))
	for i, ch := range e.Worse {
		names[i] = ch.Case
	}
	return fmt.Sprintf("%d %s worse than in the baseline %s: %s", len(e.Worse), plural(len(e.Worse), "case", "cases"), e.Baseline, strings.Join(names, ", "))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// evalReport renders the result file path: its table on stdout (and its
// comparison with baseline, if given), and its HTML page to out (default:
// path with .html for .json). A regression is a *RegressionError, once
// both are written.
func evalReport(path, baseline, out string, stdout io.Writer) error {
	rep, err := evals.ReadReport(path)
	if err != nil {
		return err
	}
	var base *evals.Report
	if baseline != "" {
		if base, err = evals.ReadReport(baseline); err != nil {
			return fmt.Errorf("baseline: %w", err)
		}
	}
	return renderEval(rep, path, base, baseline, out, "", nil, stdout)
}

// renderEval writes rep, read from path, as evalReport does: compared
// with base, read from baseline, if base is not nil. The line that names
// the page written names written first, if not "". steps, if not nil,
// gives the links to the runs' steps (evalreport.Options.Steps).
func renderEval(rep *evals.Report, path string, base *evals.Report, baseline, out, written string, steps func(c, run int) string, stdout io.Writer) error {
	opts := evalreport.Options{Source: path, Steps: steps}
	if base != nil {
		opts.Baseline, opts.BaseSource = base, baseline
		opts.Comparison = evals.Compare(base, rep, 0)
	}
	if out == "" {
		out = strings.TrimSuffix(path, ".json") + ".html"
	}
	if err := writeEvalTable(stdout, rep, opts.Comparison); err != nil {
		return err
	}
	var page bytes.Buffer
	if err := evalreport.HTML(&page, rep, opts); err != nil {
		return err
	}
	if err := os.WriteFile(out, page.Bytes(), 0o644); err != nil {
		return err
	}
	if written != "" {
		written = showtext.Printable(written) + " and "
	}
	fmt.Fprintf(stdout, "wrote %s%s\n", written, showtext.Printable(out))
	if c := opts.Comparison; c != nil && c.Regressed() {
		return &RegressionError{Baseline: baseline, Worse: c.Worse}
	}
	return nil
}

// writeEvalTable writes rep's table (evals.Report.WriteTable) and the
// comparison c, if not nil, with the case names, which the eval's dataset
// chose, made printable: no control sequence reaches the terminal.
func writeEvalTable(w io.Writer, rep *evals.Report, c *evals.Comparison) error {
	shown := *rep
	shown.Eval = showtext.Printable(rep.Eval)
	shown.Cases = make([]evals.CaseResult, len(rep.Cases))
	for i, cr := range rep.Cases {
		shown.Cases[i] = evals.CaseResult{Name: showtext.Printable(cr.Name), Figures: cr.Figures}
	}
	fmt.Fprintf(w, "eval %s: %d runs a case\n", shown.Eval, rep.K)
	if err := shown.WriteTable(w); err != nil {
		return err
	}
	if c == nil {
		return nil
	}
	sc := *c
	for _, l := range []*[]evals.Change{&sc.Worse, &sc.Better, &sc.Unsure} {
		chs := make([]evals.Change, len(*l))
		for i, ch := range *l {
			ch.Case = showtext.Printable(ch.Case)
			chs[i] = ch
		}
		*l = chs
	}
	for _, l := range []*[]string{&sc.Added, &sc.Removed} {
		ns := make([]string, len(*l))
		for i, n := range *l {
			ns[i] = showtext.Printable(n)
		}
		*l = ns
	}
	fmt.Fprintf(w, "\ncompared with the baseline: %s\n", evalreport.Verdict(&sc))
	return sc.WriteText(w)
}
