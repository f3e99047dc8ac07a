package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/evals"
)

// TestEvalRun runs reprompt eval run on the eval of testdata/evalpkg, a
// go test each: the progress, the table, the result file and its page,
// the comparison with a baseline, the exit status; go test's output when
// it fails; an interrupt.
func TestEvalRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test")
	}
	dir := t.TempDir()
	const pkg = "./testdata/evalpkg"
	goodDir := filepath.Join(dir, "good")

	t.Run("good", func(t *testing.T) {
		code, out, errs := cli(t, "eval", "run", pkg, "-o", goodDir)
		require.Equal(t, 0, code, "exit status:\n%s", errs)
		assert.Empty(t, errs, "stderr")
		assert.NotContains(t, out, "\x1b", "not a terminal: no escape sequence")
		assert.NotContains(t, out, "\r", "not a terminal: no carriage return")
		lines := strings.Split(out, "\n")
		require.Greater(t, len(lines), 3, out)
		assert.Equal(t, "eval triage: 4 cases × 4 runs", lines[0], "the start")
		assert.Regexp(t, `^eval triage: 16/16 runs, 0 failed, \d+\.\dk tokens, \$0\.0000, [0-9.]+m?s, done$`, lines[1], "the end")
		assert.Equal(t, "eval triage: 4 runs a case", lines[2], "the table")
		assert.Regexp(t, `(?m)^\s+issue-4\s+4/4\s+1\.000\s+1\.000\s+1\.000\s+2\.0/2\.0\s`, out, "the table")
		result, page := filepath.Join(goodDir, "triage.json"), filepath.Join(goodDir, "triage.html")
		assert.Contains(t, out, "\nwrote "+result+" and "+page+"\n", "the files")
		rep, err := evals.ReadReport(result)
		require.NoError(t, err, "the result file")
		assert.Equal(t, 16, rep.Overall.Passed, "runs passed")
		html, err := os.ReadFile(page)
		require.NoError(t, err, "the page")
		assert.Contains(t, string(html), `<a class="chip pass" href="#c4-r3"`, "the page: a chip a run")

		// Each run's steps: a golden step file, and its page, which the
		// report links to.
		assert.Contains(t, out, "\nwrote the steps of 16 runs in "+filepath.Join(goodDir, "triage-runs")+"\n", "the steps")
		assert.Contains(t, string(html), `run 3 passed <span class="st">`, "the page: a run")
		assert.Contains(t, string(html), ` <a class="steps" href="triage-runs/issue-4/run-3.html">steps</a></span></summary>`, "the page: the link to a run's steps")
		steps, err := os.ReadFile(filepath.Join(goodDir, "triage-runs", "issue-4", "run-3.html"))
		require.NoError(t, err, "the page of a run's steps")
		assert.Contains(t, string(steps), "<title>triage · issue-4 · run 3", "the page of a run's steps")
		golden, err := os.ReadFile(filepath.Join(goodDir, "triage-runs", "issue-4", "run-3.txtar"))
		require.NoError(t, err, "the golden file of a run's steps")
		assert.Contains(t, string(golden), "call: call_1 read_issue {\"number\":4}\n", "the golden file of a run's steps")
	})

	t.Run("regression", func(t *testing.T) {
		// The scripted runs make mistakes; every case must pass every run.
		t.Setenv("EVALPKG_MISTAKES", "1")
		t.Setenv("EVALPKG_THRESHOLD", "1")
		out := filepath.Join(dir, "bad")
		code, stdout, errs := cli(t, "eval", "run", "--baseline", filepath.Join(goodDir, "triage.json"), pkg, "-o", out)
		assert.Equal(t, 1, code, "exit status: a regression, cases below the threshold:\n%s", errs)
		assert.Regexp(t, `(?m)^eval triage: 16/16 runs, 7 failed, .*, done$`, stdout, "the end")
		assert.Regexp(t, `(?m)^\s+issue-4\s+0/4\s+0\.000\s`, stdout, "the table")
		assert.Contains(t, stdout, "worse issue-4: 4/4 → 0/4 (Fisher p=0.029, α=0.05)\n", "the comparison")
		assert.Contains(t, errs, "go test -count=1 ./testdata/evalpkg:\n--- FAIL: TestTriageEval", "go test's output")
		assert.Contains(t, errs, "evals: case issue-4 passed 0 of 4 runs: pass@1 0.000 < 1", "go test's output")
		assert.Contains(t, errs, "\nreprompt: go test ./testdata/evalpkg failed: exit status 1\n1 case worse than in the baseline "+filepath.Join(goodDir, "triage.json")+": issue-4\n", "the errors")
		html, err := os.ReadFile(filepath.Join(out, "triage.html"))
		require.NoError(t, err, "the page, written though go test failed")
		assert.Contains(t, string(html), `<section class="comparison regressed" id="comparison">`, "the page: the comparison")
		assert.Contains(t, string(html), `<div class="head">run 0 failed <span class="st">`, "the page: a failed run")
		assert.Contains(t, string(html), ` <a class="steps" href="triage-runs/issue-4/run-0.html#step-1">steps</a></div>`, "the page: the link to the step a failed run's first check failed at")
	})

	t.Run("dataset", func(t *testing.T) {
		// --live: the package is built with -tags live, where the eval
		// fails unless REPROMPT_EVAL=live.
		out := filepath.Join(dir, "more")
		// The package as a directory, without ./
		code, stdout, errs := cli(t, "eval", "run", "testdata/evalpkg", "--dataset", "testdata/evalpkg/more.yaml", "--k", "2", "--live", "-o", out, "-run", "^TestTriageEval$")
		require.Equal(t, 0, code, "exit status:\n%s", errs)
		assert.Contains(t, stdout, "eval triage: 2 cases × 2 runs\n", "the start")
		rep, err := evals.ReadReport(filepath.Join(out, "triage.json"))
		require.NoError(t, err, "the result file")
		require.Len(t, rep.Cases, 2, "the dataset's cases")
		assert.Equal(t, "issue-5", rep.Cases[0].Name, "the dataset's first case")
		assert.Equal(t, 2, rep.K, "--k")
	})

	t.Run("interrupted", func(t *testing.T) {
		if runtime.GOOS == "windows" {
			t.Skip("no interrupt to send go test: it is killed")
		}
		t.Setenv("EVALPKG_DELAY", "100ms")
		plain := plainEvery
		plainEvery = 0 // a line at each run
		t.Cleanup(func() { plainEvery = plain })
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var stdout, stderr syncBuffer
		exit := make(chan int, 1)
		out := filepath.Join(dir, "interrupted")
		go func() { exit <- run(ctx, []string{"eval", "run", pkg, "-o", out}, &stdout, &stderr) }()
		twoRuns := regexp.MustCompile(`eval triage: [2-9]/16 runs`)
		require.Eventually(t, func() bool { return twoRuns.MatchString(stdout.String()) }, time.Minute, 10*time.Millisecond, "two runs: %s", stdout.String())
		cancel() // as an interrupt does
		var code int
		select {
		case code = <-exit:
		case <-time.After(time.Minute):
			require.Fail(t, "eval run did not end after the interrupt")
		}
		assert.Equal(t, 1, code, "exit status")
		assert.Equal(t, "reprompt: interrupted: the results hold the runs measured before\n", stderr.String(), "stderr")
		assert.Regexp(t, `(?m)^eval triage: \d+/16 runs, 0 failed, .*, done, stopped: cancelled, error: interrupted`, stdout.String(), "the end")
		assert.Regexp(t, `(?m)^  stopped: cancelled$`, stdout.String(), "the table")
		rep, err := evals.ReadReport(filepath.Join(out, "triage.json"))
		require.NoError(t, err, "the result file, whole")
		assert.Equal(t, "cancelled", rep.Stopped, "Stopped")
		assert.Less(t, rep.Overall.Runs, 16, "runs measured")
		assert.GreaterOrEqual(t, rep.Overall.Runs, 2, "runs measured")
	})

	t.Run("failures", func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			panicAt string // the case whose first run panics
			args    []string
			want    []string
		}{
			{"build", "", []string{"./testdata/evalbroken"}, []string{
				"broken_test.go:8:14: cannot use \"not a number\" (untyped string constant) as int value in variable declaration\n",
				"[build failed]", "reprompt: go test ./testdata/evalbroken failed: exit status 1\n"}},
			{"panic", "issue-3", []string{pkg}, []string{"panic: evalpkg: the run panics", "testdata/evalpkg/eval_test.go:",
				"reprompt: go test ./testdata/evalpkg failed: exit status 1\neval triage did not end: its result is cut short\n"}},
			{"no eval", "", []string{pkg, "-run", "^TestNone$"}, []string{"reprompt: no eval ran in ./testdata/evalpkg"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if tc.panicAt != "" {
					t.Setenv("EVALPKG_PANIC", tc.panicAt)
				}
				code, stdout, errs := cli(t, append([]string{"eval", "run", "-o", filepath.Join(dir, "failures")}, tc.args...)...)
				assert.Equal(t, 1, code, "exit status")
				assert.NotContains(t, stdout, "wrote", "no result")
				for _, want := range tc.want {
					assert.Contains(t, errs, want, "stderr")
				}
			})
		}
	})
}
