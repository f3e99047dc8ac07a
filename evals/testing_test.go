package evals_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/evals"
	"github.com/reprompt/reprompt/evals/check"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/snapshots"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var issueNumber = regexp.MustCompile(`Triage issue (\d+)`)

// server stands in for a live model server: it reads the issue the user
// names, then answers with a triage whose priority is the issue's number
// modulo 4, plus 1 (what the cases expect). A new one is made per run, as
// a connection to a server would be.
func server() (llm.Model, error) {
	answer := func(req *llm.Request) snapshots.Reply {
		n := 0
		for _, m := range req.Messages {
			if m.Role == defs.RoleUser {
				if sub := issueNumber.FindStringSubmatch(m.Content); sub != nil {
					n, _ = strconv.Atoi(sub[1])
				}
			}
		}
		last := req.Messages[len(req.Messages)-1]
		if last.Role != defs.RoleTool {
			return snapshots.Reply{Calls: []snapshots.Call{{Name: "read_issue", Args: readArgs{Number: n}}}}
		}
		args, _ := json.Marshal(triage{Priority: (n-1)%4 + 1, Label: "bug"})
		return snapshots.Reply{Calls: []snapshots.Call{{Name: req.Output.Name, Args: json.RawMessage(args)}}}
	}
	return snapshots.Script(snapshots.Reply{Func: answer}, snapshots.Reply{Func: answer}), nil
}

func triageEval(models evals.ModelFunc) *evals.Eval[issue, triage] {
	return &evals.Eval[issue, triage]{
		Name:   "triage",
		Cases:  cases(3),
		Prompt: triageAgent,
		Models: models,
		Checks: []check.Check{check.Called("read_issue", nil), check.MaxSteps(2)},
		K:      2,
	}
}

// TestTriageEval is an eval run as a test: offline from the recordings in
// testdata/recordings (as in CI), against the server with
// REPROMPT_EVAL=live, recorded anew with REPROMPT_EVAL=record.
func TestTriageEval(t *testing.T) {
	rep := triageEval(evals.Recordings("testdata/recordings", server)).Test(t, evals.Threshold{PassAt1: 1, PassHatK: 1})
	assert.Equal(t, 6, rep.Overall.Runs, "runs")
}

func TestRecordThenReplay(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(snapshots.CIEnv, "")
	t.Setenv(evals.ModeEnv, "record")
	live, err := triageEval(evals.Recordings(dir, server)).Run(t.Context(), nil)
	require.NoError(t, err)
	assert.InDelta(t, 1.0, live.Overall.PassAt1, 1e-9, "live pass@1: %+v", live.Cases)
	_, err = os.Stat(filepath.Join(dir, "issue-2", "run-1.json"))
	require.NoError(t, err, "a run's recording")

	t.Setenv(evals.ModeEnv, "")
	replayed, err := triageEval(evals.Recordings(dir, nil)).Run(t.Context(), nil)
	require.NoError(t, err)
	for i, c := range replayed.Cases {
		for j, r := range c.Runs {
			assert.Equal(t, string(live.Cases[i].Runs[j].Output), string(r.Output), "%s run %d: replayed answer", c.Name, j)
			assert.Equal(t, live.Cases[i].Runs[j].Steps, r.Steps, "%s run %d: replayed steps", c.Name, j)
		}
	}
	assert.Equal(t, live.Overall.PassAt1, replayed.Overall.PassAt1, "pass@1")

	// A recording missing: the run fails, naming the command.
	require.NoError(t, os.Remove(filepath.Join(dir, "issue-2", "run-1.json")))
	rep, err := triageEval(evals.Recordings(dir, nil)).Run(t.Context(), nil)
	require.NoError(t, err)
	r := rep.Case("issue-2").Runs[1]
	assert.False(t, r.Pass)
	assert.Contains(t, r.Error, "record it with REPROMPT_EVAL=record go test")

	// Never recorded on CI.
	t.Setenv(snapshots.CIEnv, "true")
	t.Setenv(evals.ModeEnv, "record")
	_, err = evals.Recordings(dir, server)("issue-1", 0)
	assert.ErrorContains(t, err, "recordings are never written on CI")
	t.Setenv(evals.ModeEnv, "sometimes")
	_, err = evals.Recordings(dir, server)("issue-1", 0)
	assert.ErrorContains(t, err, "want replay, record or live")
}

func TestLive(t *testing.T) {
	t.Setenv(evals.ModeEnv, "live")
	dir := t.TempDir()
	rep, err := triageEval(evals.Recordings(dir, server)).Run(t.Context(), nil)
	require.NoError(t, err)
	assert.InDelta(t, 1.0, rep.Overall.PassAt1, 1e-9, "pass@1")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "live: nothing recorded")
}

func TestTestNames(t *testing.T) {
	// Subtests are named after the cases.
	var names []string
	e := triageEval(func(name string, run int) (llm.Model, error) { return server() })
	e.OnCase = func(c *evals.CaseResult) { names = append(names, c.Name) }
	e.Test(t, evals.Threshold{PassAt1: 1})
	assert.Equal(t, []string{"issue-1", "issue-2", "issue-3"}, names)
}

func TestTestWritesTheResultFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	t.Setenv(evals.OutEnv, dir)
	var seen int
	e := triageEval(func(name string, run int) (llm.Model, error) { return server() })
	e.OnCase = func(*evals.CaseResult) { seen++ }
	rep := e.Test(t, evals.Threshold{PassAt1: 1})
	assert.Equal(t, 3, seen, "the eval's own OnCase, still called")
	for _, c := range rep.Cases {
		assert.Len(t, c.Runs, 2, "%s: the runs kept in the report Test returns", c.Name)
	}
	path := evals.OutPath(dir, "triage")
	assert.Equal(t, filepath.Join(dir, "triage.json"), path, "OutPath")
	got, err := evals.ReadReport(path)
	require.NoError(t, err, "the result file")
	assert.Equal(t, "triage", got.Eval, "Eval")
	require.Len(t, got.Cases, 3, "cases in the file")
	assert.Len(t, got.Cases[1].Runs, 2, "issue-2: runs in the file")
	assert.Equal(t, rep.Overall.Passed, got.Overall.Passed, "Overall.Passed")
}

// TestFileNames checks that names in any script are made distinct file
// names (letters and digits kept, as Recordings says), not all "_": two
// cases would share their recordings and step files, two evals their
// result file.
func TestFileNames(t *testing.T) {
	assert.Equal(t, filepath.Join("out", "триаж.json"), evals.OutPath("out", "триаж"))
	assert.NotEqual(t, evals.OutPath("out", "триаж"), evals.OutPath("out", "сортировка"), "two evals' result files")
	assert.NotEqual(t, evals.StepsPath("s", "e", "ошибка", 0), evals.StepsPath("s", "e", "опечатка", 0), "two cases' steps")
	assert.Equal(t, filepath.Join("s", "e", "バグ_1", "run-0.txtar"), evals.StepsPath("s", "e", "バグ #1", 0))
	assert.Equal(t, filepath.Join("s", "e", "a_b", "run-2.txtar"), evals.StepsPath("s", "e", "a/b", 2), "unsafe ASCII still replaced")
	assert.Equal(t, filepath.Join("s", "_", "_", "run-0.txtar"), evals.StepsPath("s", "..", "", 0))

	// Recordings of two such cases are two files.
	dir := t.TempDir()
	t.Setenv(snapshots.CIEnv, "")
	t.Setenv(evals.ModeEnv, "record")
	e := triageEval(evals.Recordings(dir, server))
	e.Cases[0].Name, e.Cases[1].Name, e.Cases[2].Name = "ошибка", "опечатка", "сбой"
	_, err := e.Run(t.Context(), nil)
	require.NoError(t, err)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 3, "a directory of recordings a case")

	// Two names that make one file name: the second case's runs fail,
	// its recordings are not the first's.
	e = triageEval(evals.Recordings(t.TempDir(), server))
	e.Cases[0].Name, e.Cases[1].Name = "a/b", "a b"
	e.Concurrency = 1 // the first case asks first
	rep, err := e.Run(t.Context(), nil)
	require.NoError(t, err)
	assert.Positive(t, rep.Case("a/b").Figures.Passed, "the first case's runs")
	second := rep.Case("a b")
	require.NotEmpty(t, second.Runs)
	for _, r := range second.Runs {
		assert.False(t, r.Pass, "a b run %d", r.Run)
		assert.Contains(t, r.Error, `cases "a/b" and "a b" would share the recordings`, "a b run %d", r.Run)
	}
}
