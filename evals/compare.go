package evals

import (
	"fmt"
	"io"
	"math"
)

// DefaultAlpha is the significance level of Compare when its alpha is
// zero.
const DefaultAlpha = 0.05

// Change is a case whose pass rate moved between a baseline and a later
// run.
type Change struct {
	Case string `json:"case"`
	// Base and Now are the runs passed and measured in the baseline and
	// in the later run.
	BasePassed int `json:"base_passed"`
	BaseRuns   int `json:"base_runs"`
	NowPassed  int `json:"now_passed"`
	NowRuns    int `json:"now_runs"`
	// P is the two-sided p-value of Fisher's exact test on the 2×2 table
	// of passes and failures (see Compare).
	P float64 `json:"p"`
}

// Comparison is a later run compared with a baseline, case by case.
type Comparison struct {
	// Alpha is the significance level the changes were judged at.
	Alpha float64 `json:"alpha"`
	// Worse and Better are the cases whose pass rate fell or rose
	// significantly; Unsure those whose pass rate moved without the
	// difference being significant, at k runs a side too few to tell.
	// Each is in dataset order (the later run's).
	Worse  []Change `json:"worse,omitempty"`
	Better []Change `json:"better,omitempty"`
	Unsure []Change `json:"unsure,omitempty"`
	// Added are the cases the baseline does not have, Removed those the
	// later run does not have (or did not run: a budget stopped it).
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
}

// Regressed reports that a case got significantly worse.
func (c *Comparison) Regressed() bool { return len(c.Worse) > 0 }

// Compare compares the later report now with the baseline base, case by
// case (by name). The significance rule: for each case the 2×2 table of
// runs passed and failed in base and in now is tested with Fisher's exact
// test, two-sided (the probability, under the hypergeometric distribution
// with the table's margins, of the tables at most as likely as the one
// observed); a case whose pass rate fell with p < alpha is Worse, one
// whose rate rose with p < alpha is Better, one whose rate moved with
// p ≥ alpha is Unsure. Fisher's test is exact at any number of runs, which
// matters at the k of an eval: with 5 runs a side, 5/5 against 0/5 gives
// p ≈ 0.008, significant at 0.05, while 5/5 against 2/5 gives p ≈ 0.17,
// which is not; a bare difference of means would call both regressions.
// alpha zero means DefaultAlpha.
func Compare(base, now *Report, alpha float64) *Comparison {
	if alpha <= 0 {
		alpha = DefaultAlpha
	}
	cmp := &Comparison{Alpha: alpha}
	inNow := map[string]bool{}
	for _, c := range now.Cases {
		if c.Figures.Runs == 0 {
			continue
		}
		inNow[c.Name] = true
		b := base.Case(c.Name)
		if b == nil || b.Figures.Runs == 0 {
			cmp.Added = append(cmp.Added, c.Name)
			continue
		}
		ch := Change{Case: c.Name, BasePassed: b.Figures.Passed, BaseRuns: b.Figures.Runs, NowPassed: c.Figures.Passed, NowRuns: c.Figures.Runs}
		bRate := float64(ch.BasePassed) / float64(ch.BaseRuns)
		nRate := float64(ch.NowPassed) / float64(ch.NowRuns)
		if bRate == nRate {
			continue
		}
		ch.P = FisherExact(ch.BasePassed, ch.BaseRuns-ch.BasePassed, ch.NowPassed, ch.NowRuns-ch.NowPassed)
		switch {
		case ch.P >= alpha:
			cmp.Unsure = append(cmp.Unsure, ch)
		case nRate < bRate:
			cmp.Worse = append(cmp.Worse, ch)
		default:
			cmp.Better = append(cmp.Better, ch)
		}
	}
	for _, c := range base.Cases {
		if c.Figures.Runs > 0 && !inNow[c.Name] {
			cmp.Removed = append(cmp.Removed, c.Name)
		}
	}
	return cmp
}

// WriteText writes the comparison for people: the cases worse, better and
// unsure, a line each, then those added and removed.
func (c *Comparison) WriteText(w io.Writer) error {
	var err error
	p := func(format string, args ...any) {
		if err == nil {
			_, err = fmt.Fprintf(w, format, args...)
		}
	}
	for _, l := range []struct {
		label   string
		changes []Change
	}{{"worse", c.Worse}, {"better", c.Better}, {"unsure", c.Unsure}} {
		for _, ch := range l.changes {
			p("%s %s: %d/%d → %d/%d (Fisher p=%.3f, α=%g)\n", l.label, ch.Case, ch.BasePassed, ch.BaseRuns, ch.NowPassed, ch.NowRuns, ch.P, c.Alpha)
		}
	}
	for _, n := range c.Added {
		p("added %s\n", n)
	}
	for _, n := range c.Removed {
		p("removed %s\n", n)
	}
	return err
}

// FisherExact returns the two-sided p-value of Fisher's exact test on the
// 2×2 table [[a, b], [c, d]]: the sum of the hypergeometric probabilities
// of the tables with the same margins that are at most as likely as this
// one (with a relative tolerance of 1e-7, as R's fisher.test).
func FisherExact(a, b, c, d int) float64 {
	row1, col1, n := a+b, a+c, a+b+c+d
	if n == 0 {
		return 1
	}
	logP := func(x int) float64 { // P(top-left cell = x)
		return lchoose(col1, x) + lchoose(n-col1, row1-x) - lchoose(n, row1)
	}
	observed := logP(a)
	p := 0.0
	for x := max(0, row1+col1-n); x <= min(row1, col1); x++ {
		if lp := logP(x); lp <= observed+1e-7 {
			p += math.Exp(lp)
		}
	}
	return min(p, 1)
}

func lchoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}
