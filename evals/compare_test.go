package evals_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/reprompt/reprompt/evals"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFisherExact(t *testing.T) {
	// The p-values R's fisher.test gives for these tables.
	for _, tc := range []struct {
		a, b, c, d int
		p          float64
	}{
		{5, 0, 0, 5, 2.0 / 252},  // 0.007937
		{5, 0, 2, 3, 42.0 / 252}, // 0.1667
		{5, 0, 5, 0, 1},
		{3, 1, 1, 3, 0.4857143},
		{10, 0, 3, 7, 0.003096},
		{0, 0, 0, 0, 1},
	} {
		assert.InDelta(t, tc.p, evals.FisherExact(tc.a, tc.b, tc.c, tc.d), 1e-6, "FisherExact(%d, %d, %d, %d)", tc.a, tc.b, tc.c, tc.d)
	}
}

func report(cases ...evals.CaseResult) *evals.Report { return &evals.Report{Cases: cases} }

func caseOf(name string, passed, runs int) evals.CaseResult {
	return evals.CaseResult{Name: name, Figures: evals.Figures{Passed: passed, Runs: runs}}
}

func TestCompare(t *testing.T) {
	base := report(caseOf("steady", 5, 5), caseOf("broke", 5, 5), caseOf("dipped", 5, 5), caseOf("fixed", 0, 5), caseOf("gone", 3, 5), caseOf("not run", 1, 5))
	now := report(caseOf("steady", 5, 5), caseOf("broke", 0, 5), caseOf("dipped", 2, 5), caseOf("fixed", 5, 5), caseOf("new", 1, 5), caseOf("not run", 0, 0))
	got := evals.Compare(base, now, 0)
	want := &evals.Comparison{
		Alpha:   0.05,
		Worse:   []evals.Change{{Case: "broke", BasePassed: 5, BaseRuns: 5, NowPassed: 0, NowRuns: 5, P: 2.0 / 252}},
		Better:  []evals.Change{{Case: "fixed", BasePassed: 0, BaseRuns: 5, NowPassed: 5, NowRuns: 5, P: 2.0 / 252}},
		Unsure:  []evals.Change{{Case: "dipped", BasePassed: 5, BaseRuns: 5, NowPassed: 2, NowRuns: 5, P: 42.0 / 252}},
		Added:   []string{"new"},
		Removed: []string{"gone", "not run"},
	}
	assert.Empty(t, cmp.Diff(want, got, cmpApprox), "comparison (-want +got)")
	assert.True(t, got.Regressed(), "Regressed")

	var b strings.Builder
	require.NoError(t, got.WriteText(&b))
	assert.Equal(t, `worse broke: 5/5 → 0/5 (Fisher p=0.008, α=0.05)
better fixed: 0/5 → 5/5 (Fisher p=0.008, α=0.05)
unsure dipped: 5/5 → 2/5 (Fisher p=0.167, α=0.05)
added new
removed gone
removed not run
`, b.String())
}

// TestBaseline saves a run as a baseline, makes the prompt worse for one
// case, and finds that case, and only it, worse.
func TestBaseline(t *testing.T) {
	path := filepath.Join(t.TempDir(), "baseline.json")
	e := knownEval(2)
	e.Models = scripted(e.Cases, nil) // every run right
	e.K = 6
	base, err := e.Run(t.Context(), nil)
	require.NoError(t, err)
	require.NoError(t, base.WriteFile(path))

	e.Models = scripted(e.Cases, map[string][]mistake{
		"issue-2": {wrongPriority, wrongPriority, wrongPriority, wrongPriority, wrongPriority, right}, // 6/6 → 1/6
		"issue-3": {wrongPriority},                                                                    // 6/6 → 5/6: not significant
	})
	now, err := e.Run(t.Context(), nil)
	require.NoError(t, err)
	saved, err := evals.ReadReport(path)
	require.NoError(t, err)
	c := evals.Compare(saved, now, 0)
	require.Len(t, c.Worse, 1, "worse: %v", c.Worse)
	assert.Equal(t, "issue-2", c.Worse[0].Case)
	assert.InDelta(t, 0.01515, c.Worse[0].P, 1e-5, "Fisher p of 6/6 against 1/6")
	require.Len(t, c.Unsure, 1)
	assert.Equal(t, "issue-3", c.Unsure[0].Case)
	assert.Empty(t, c.Better)
}

// TestReadReportInconsistent: a file Run could not have written (its k,
// pass_k or runs contradict each other) is an error naming the file and
// what is wrong, not a report that misleads what reads it.
func TestReadReportInconsistent(t *testing.T) {
	good, err := knownEval(1).Run(t.Context(), nil)
	require.NoError(t, err)
	for _, tc := range []struct {
		name, want string
		edit       func(r *evals.Report)
	}{
		{"k zero", "k 0: a case runs at least once", func(r *evals.Report) { r.K = 0 }},
		{"pass_k above k", "pass_k 5: not from 1 to k (4)", func(r *evals.Report) { r.PassK = 5 }},
		{"pass_k zero", "pass_k 0: not from 1 to k (4)", func(r *evals.Report) { r.PassK = 0 }},
		{"more runs than k", `case "issue-1": 5 runs, more than k (4)`, func(r *evals.Report) {
			r.Cases[0].Runs = append(r.Cases[0].Runs, r.Cases[0].Runs[0])
		}},
		{"run past k", `case "issue-2": run 4, not from 0 to k-1 (3)`, func(r *evals.Report) { r.Cases[1].Runs[3].Run = 4 }},
		{"run negative", `case "issue-2": run -1, not from 0 to k-1 (3)`, func(r *evals.Report) { r.Cases[1].Runs[0].Run = -1 }},
		{"run twice", `case "issue-3": run 0 twice`, func(r *evals.Report) { r.Cases[2].Runs[1].Run = 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := *good
			r.Cases = make([]evals.CaseResult, len(good.Cases))
			for i, c := range good.Cases {
				c.Runs = slices.Clone(c.Runs)
				r.Cases[i] = c
			}
			tc.edit(&r)
			path := filepath.Join(t.TempDir(), "result.json")
			require.NoError(t, r.WriteFile(path))
			_, err := evals.ReadReport(path)
			require.Error(t, err)
			assert.Equal(t, "read report "+path+": "+tc.want, err.Error())
		})
	}
	path := filepath.Join(t.TempDir(), "good.json")
	require.NoError(t, good.WriteFile(path))
	_, err = evals.ReadReport(path)
	assert.NoError(t, err, "the report as Run made it")
}
