package evals_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reprompt/reprompt/evals"
	"github.com/reprompt/reprompt/evals/check"
	"github.com/reprompt/reprompt/llm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestJudge(t *testing.T) {
	var mu sync.Mutex
	judges := map[int]*snapshotsModel{}
	judge := &check.Judge{
		Rubric:     "The label must fit the issue.",
		Transcript: true,
		Models: func(name string, run int) (llm.Model, error) {
			v := check.Verdict{Score: 5, Reason: "The label fits."}
			if run == 1 {
				v = check.Verdict{Score: 2, Reason: "A crash is a bug, not docs."}
			}
			m := judgeScript(v)
			mu.Lock()
			judges[run] = m
			mu.Unlock()
			return m, nil
		},
	}
	e := knownEval(2)
	e.Cases = e.Cases[:1]
	e.K = 2
	e.Checks = []check.Check{judge}
	rep, err := e.Run(t.Context(), nil)
	require.NoError(t, err)
	runs := rep.Cases[0].Runs
	require.Len(t, runs, 2)

	assert.True(t, runs[0].Pass, "run 0: %v", runs[0].Failures)
	require.Len(t, runs[0].Grades, 1)
	g := runs[0].Grades[0]
	assert.Equal(t, check.Verdict{Score: 5, Reason: "The label fits."}, g.Verdict, "run 0: the verdict")
	assert.Equal(t, "judge", g.Check)
	assert.Equal(t, 1, g.Steps, "run 0: the judge's steps")
	assert.Positive(t, g.Usage.InputTokens, "run 0: the judge's usage")

	require.Len(t, runs[1].Failures, 1)
	f := runs[1].Failures[0]
	assert.Equal(t, "judge", f.Check)
	assert.Equal(t, "step 1: score 2, below 4: A crash is a bug, not docs.", f.Error())
	assert.Contains(t, f.Golden, "-- step 1/answer --", "the step of the answer")

	// What the judge was asked: the rubric, the input, the expected and
	// given answers, the transcript, for a typed verdict.
	reqs := judges[0].Requests()
	require.Len(t, reqs, 1)
	sys := reqs[0].System
	for _, want := range []string{
		"<rubric>\nThe label must fit the issue.\n</rubric>",
		`<input>{"number":1,"text":"Issue 1: the program crashes."}</input>`,
		`<expected>{"priority":1,"label":"bug"}</expected>`,
		`<answer>{"priority":1,"label":"bug"}</answer>`,
		"call read_issue {\"number\":1}",
	} {
		assert.Contains(t, sys, want, "the judge's system prompt")
	}
	require.NotNil(t, reqs[0].Output, "a typed verdict")
	assert.Equal(t, "verdict", reqs[0].Output.Name)
	assert.True(t, strings.Contains(string(reqs[0].Output.Schema), `"score"`), "the verdict's schema")
}

func TestJudgeWithoutAnswer(t *testing.T) {
	e := knownEval(1)
	e.Cases = e.Cases[:1]
	e.K = 1
	e.Checks = []check.Check{&check.Judge{Label: "tone", Model: judgeScript(check.Verdict{Score: 1, Reason: "x"}), PassScore: 1}}
	rep, err := e.Run(t.Context(), nil)
	require.NoError(t, err)
	r := rep.Cases[0].Runs[0]
	assert.True(t, r.Pass, "score 1 passes at PassScore 1: %v", r.Failures)
	assert.Equal(t, "tone", r.Grades[0].Check)
}

// TestJudgeGradesPerRun checks that each run keeps its own grades when one
// goroutine checks every run in one Trajectory (Concurrency 1), and that
// the report streamed to a file has them too.
func TestJudgeGradesPerRun(t *testing.T) {
	judge := &check.Judge{
		Rubric: "The label must fit the issue.",
		Models: func(name string, run int) (llm.Model, error) {
			return judgeScript(check.Verdict{Score: 5 - run, Reason: fmt.Sprintf("run %d", run)}), nil
		},
	}
	e := knownEval(2)
	e.K, e.Concurrency = 3, 1
	e.Checks = []check.Check{judge}
	var seen [][]check.Grade
	e.OnCase = func(c *evals.CaseResult) {
		for _, r := range c.Runs {
			seen = append(seen, r.Grades)
		}
	}
	path := filepath.Join(t.TempDir(), "result.json")
	f, err := os.Create(path)
	require.NoError(t, err)
	_, err = e.Run(t.Context(), f)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	rep, err := evals.ReadReport(path)
	require.NoError(t, err)
	require.Len(t, seen, 3*len(rep.Cases))
	for c, cr := range rep.Cases {
		require.Len(t, cr.Runs, 3, "%s", cr.Name)
		for run, r := range cr.Runs {
			for _, grades := range [][]check.Grade{seen[3*c+run], r.Grades} {
				require.Len(t, grades, 1, "%s run %d: one judge, one grade", cr.Name, run)
				assert.Equal(t, fmt.Sprintf("run %d", run), grades[0].Verdict.Reason, "%s run %d", cr.Name, run)
			}
		}
	}
}

// TestJudgeCutByTimeBudget checks that a run whose judge the time budget
// cuts short is left out of the figures, as any run under way at the
// deadline is, not counted as a failure.
func TestJudgeCutByTimeBudget(t *testing.T) {
	e := knownEval(2)
	e.Cases = e.Cases[:1]
	e.K = 2
	e.Checks = []check.Check{&check.Judge{Rubric: "The label must fit the issue.", Model: blocking{}}}
	e.Budget.Time = 100 * time.Millisecond
	rep, err := e.Run(t.Context(), nil)
	require.NoError(t, err)
	assert.Equal(t, "time budget", rep.Stopped)
	assert.Equal(t, 0, rep.Overall.Runs, "runs whose judge was cut short are not measured")
	assert.Equal(t, 0, rep.Cases[0].Figures.Runs, "nor failed: %v", rep.Cases[0].Runs)
}
