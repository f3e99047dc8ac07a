package evals_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/evals"
	"github.com/reprompt/reprompt/llm"
)

// readProgress reads the progress file at path, a Progress a line.
func readProgress(t *testing.T, path string) []evals.Progress {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err, "the progress file")
	defer f.Close()
	var evs []evals.Progress
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ev evals.Progress
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev), "line %q", sc.Text())
		evs = append(evs, ev)
	}
	require.NoError(t, sc.Err())
	return evs
}

// TestTestProgress: with ProgressEnv set, Test appends a start line, a
// line a run as it ends (a run without a model too), and an end line
// naming the result file.
func TestTestProgress(t *testing.T) {
	dir := t.TempDir()
	progress := filepath.Join(dir, "progress.jsonl")
	t.Setenv(evals.ProgressEnv, progress)
	t.Setenv(evals.OutEnv, dir)
	e := triageEval(nil)
	models := scripted(e.Cases, map[string][]mistake{"issue-2": {right, noRead}})
	e.Models = func(name string, run int) (llm.Model, error) {
		if name == "issue-3" && run == 1 {
			return nil, errors.New("no model")
		}
		return models(name, run)
	}
	e.Concurrency = 1 // the runs' lines in order
	e.Test(t, evals.Threshold{})

	evs := readProgress(t, progress)
	require.Len(t, evs, 1+6+1, "start, a line a run, end: %+v", evs)
	for i := range evs {
		evs[i].LatencyMS = 0 // the runs' and the eval's
	}
	want := []evals.Progress{
		{Event: "start", Eval: "triage", Cases: 3, K: 2},
		{Event: "run", Eval: "triage", Case: "issue-1", Run: 0, Pass: true, Tokens: evs[1].Tokens},
		{Event: "run", Eval: "triage", Case: "issue-1", Run: 1, Pass: true, Tokens: evs[2].Tokens},
		{Event: "run", Eval: "triage", Case: "issue-2", Run: 0, Pass: true, Tokens: evs[3].Tokens},
		{Event: "run", Eval: "triage", Case: "issue-2", Run: 1, Failed: []string{"called read_issue"}, Tokens: evs[4].Tokens},
		{Event: "run", Eval: "triage", Case: "issue-3", Run: 0, Pass: true, Tokens: evs[5].Tokens},
		{Event: "run", Eval: "triage", Case: "issue-3", Run: 1, Failed: []string{"model"}},
		{Event: "end", Eval: "triage", Result: evals.OutPath(dir, "triage")},
	}
	assert.Empty(t, cmp.Diff(want, evs), "the progress lines (-want +got)")
	assert.Positive(t, evs[1].Tokens, "a run's tokens")
}

// TestTestFromEnv: DatasetEnv replaces the eval's cases with a file's,
// KEnv its runs a case; with StepsEnv each run's steps are written as a
// golden step file.
func TestTestFromEnv(t *testing.T) {
	dataset, err := filepath.Abs("testdata/issues.yaml")
	require.NoError(t, err)
	steps := t.TempDir()
	t.Setenv(evals.DatasetEnv, dataset)
	t.Setenv(evals.KEnv, "3")
	t.Setenv(evals.StepsEnv, steps)
	e := triageEval(func(string, int) (llm.Model, error) { return server() })
	rep := e.Test(t, evals.Threshold{})
	require.Len(t, rep.Cases, 2, "the cases of %s", dataset)
	assert.Equal(t, "crash", rep.Cases[0].Name, "the first case of the file")
	assert.Equal(t, 3, rep.K, "K")
	assert.Equal(t, 3, rep.Cases[0].Figures.Runs, "runs of a case")
	assert.Equal(t, 2, e.K, "the eval itself, unchanged")
	assert.Len(t, e.Checks, 2, "the eval's checks, unchanged")

	path := evals.StepsPath(steps, "triage", "typo", 2)
	assert.Equal(t, filepath.Join(steps, "triage", "typo", "run-2.txtar"), path, "StepsPath")
	golden, err := os.ReadFile(path)
	require.NoError(t, err, "the steps of a run")
	assert.True(t, strings.HasPrefix(string(golden), "reprompt snapshot v1\n-- step 0/system --\n"), "a golden step file:\n%s", golden)
	assert.Contains(t, string(golden), "call: call_1 read_issue {\"number\":2}\n", "the run's steps")
	// The check that writes the steps never fails a run.
	assert.Equal(t, 3, rep.Cases[0].Figures.Passed, "crash: runs passed")
	for _, c := range rep.Cases {
		for _, r := range c.Runs {
			for _, f := range r.Failures {
				assert.NotEqual(t, "steps", f.Check, "%s run %d: a failure", c.Name, r.Run)
			}
		}
	}
}
