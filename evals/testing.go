package evals

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/snapshots"
)

// Threshold is what each case of an eval run as a test must reach. Zero
// fields check nothing; the zero Threshold fails no case.
type Threshold struct {
	PassAt1, PassAtK, PassHatK float64
}

// Test runs e as a test: the eval runs (with t.Context()), then each case
// is a subtest (t.Run, named after the case) that fails when its figures
// are below min, logging every failing run's failures with their steps as
// golden files show them. The table of figures is logged; the report is
// returned for further assertions. A configuration error fails t at once.
//
// Offline in CI, e's Models are recordings (Recordings); live when asked.
//
// With the variable OutEnv set to a directory, the report is also written
// there as it goes, as Run writes it, to the file named after the eval
// (OutPath): the result file that "reprompt eval report" renders.
func (e *Eval[In, Out]) Test(t *testing.T, min Threshold) *Report {
	t.Helper()
	rep, err := e.runForTest(t)
	if err != nil {
		t.Fatalf("evals: %s: %v", e.Name, err)
		return rep
	}
	var b strings.Builder
	rep.WriteTable(&b)
	t.Logf("eval %s:\n%s", e.Name, b.String())
	for _, c := range rep.Cases {
		t.Run(c.Name, func(t *testing.T) {
			f := c.Figures
			var low []string
			if f.PassAt1 < min.PassAt1 {
				low = append(low, fmt.Sprintf("pass@1 %.3f < %g", f.PassAt1, min.PassAt1))
			}
			if f.PassAtK < min.PassAtK {
				low = append(low, fmt.Sprintf("pass@%d %.3f < %g", rep.PassK, f.PassAtK, min.PassAtK))
			}
			if f.PassHatK < min.PassHatK {
				low = append(low, fmt.Sprintf("pass^%d %.3f < %g", rep.PassK, f.PassHatK, min.PassHatK))
			}
			if len(low) == 0 {
				return
			}
			var b strings.Builder
			for _, r := range c.Runs {
				for _, fl := range r.Failures {
					fmt.Fprintf(&b, "run %d: %s", r.Run, fl.String())
				}
			}
			t.Errorf("evals: case %s passed %d of %d runs: %s\n%s", c.Name, f.Passed, f.Runs, strings.Join(low, ", "), b.String())
		})
	}
	return rep
}

// OutEnv is the environment variable that, set to a directory, makes
// Eval.Test write each eval's result file there (OutPath):
//
//	REPROMPT_EVAL_OUT=out go test ./triage -run '^TestTriageEval$'
//	reprompt eval report out/triage.json --baseline baseline.json
const OutEnv = "REPROMPT_EVAL_OUT"

// OutPath returns the file that Eval.Test writes the report of the eval
// named name to, in the directory dir: dir/<name>.json, the name made a
// file name as Recordings makes a case's.
func OutPath(dir, name string) string { return filepath.Join(dir, fileName(name)+".json") }

// runForTest runs e for Test: streamed to the file OutEnv asks for, if it
// does, the cases' runs still kept in the report for the failures' logs.
func (e *Eval[In, Out]) runForTest(t *testing.T) (*Report, error) {
	dir := os.Getenv(OutEnv)
	if dir == "" {
		return e.Run(t.Context(), nil)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := OutPath(dir, e.Name)
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	var runs [][]RunResult
	ec := *e
	ec.OnCase = func(c *CaseResult) {
		runs = append(runs, slices.Clone(c.Runs))
		if e.OnCase != nil {
			e.OnCase(c)
		}
	}
	rep, err := ec.Run(t.Context(), f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("eval: write the report: %w", cerr)
	}
	if rep == nil { // a configuration error: no report to keep
		os.Remove(path)
		return nil, err
	}
	for i := range rep.Cases {
		if i < len(runs) {
			rep.Cases[i].Runs = runs[i]
		}
	}
	t.Logf("eval %s: result written to %s", e.Name, path)
	return rep, err
}

// ModeEnv is the environment variable that tells Recordings where the
// models come from: "" or "replay" (the recordings: offline, as in CI),
// "record" (the live model, each run recorded, replacing its recording) or
// "live" (the live model, nothing recorded). Recording is refused when the
// variable CI is set, as golden files are never written there.
const ModeEnv = "REPROMPT_EVAL"

// Recordings returns a ModelFunc for Eval.Models (or check.Judge.Models) that
// gives each run the recording dir/<case>/run-<n>.json (snapshots.Replay),
// or, as ModeEnv asks, the model live returns, recording its replies to
// that file (snapshots.Record) after each one. The case's name is made a
// file name by replacing what is not a letter, digit, '.', '_' or '-'.
//
// A recording missing in replay mode fails the run, naming the command
// that records it:
//
//	REPROMPT_EVAL=record go test ./pkg -run '^TestEval$'
func Recordings(dir string, live func() (llm.Model, error)) ModelFunc {
	return func(name string, run int) (llm.Model, error) {
		path := filepath.Join(dir, fileName(name), fmt.Sprintf("run-%d.json", run))
		switch mode := os.Getenv(ModeEnv); mode {
		case "", "replay":
			m, err := snapshots.Replay(path)
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("no recording %s: record it with %s=record go test", path, ModeEnv)
			}
			return m, err
		case "record", "live":
			if mode == "record" && isSet(os.Getenv(snapshots.CIEnv)) {
				return nil, fmt.Errorf("%s=record with %s set: recordings are never written on CI", ModeEnv, snapshots.CIEnv)
			}
			if live == nil {
				return nil, fmt.Errorf("%s=%s: no live model", ModeEnv, mode)
			}
			m, err := live()
			if err != nil || mode == "live" {
				return m, err
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return nil, err
			}
			return &recording{Recorder: snapshots.Record(m), path: path}, nil
		default:
			return nil, fmt.Errorf("%s=%q: want replay, record or live", ModeEnv, mode)
		}
	}
}

// recording is a Recorder that writes its file after every reply, so that
// the eval needs no hook at the end of a run.
type recording struct {
	*snapshots.Recorder
	path string
}

func (r *recording) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	rep, err := r.Recorder.Generate(ctx, req)
	if werr := r.WriteFile(r.path); werr != nil {
		return nil, werr
	}
	return rep, err
}

func (r *recording) Stream(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Reply, error) {
	rep, err := r.Recorder.Stream(ctx, req, onDelta)
	if werr := r.WriteFile(r.path); werr != nil {
		return nil, werr
	}
	return rep, err
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func fileName(name string) string {
	if s := unsafeName.ReplaceAllString(name, "_"); s != "" && s != "." && s != ".." {
		return s
	}
	return "_"
}

// isSet reads a variable as snapshots does: set unless empty, "0",
// "false", "no" or "off".
func isSet(v string) bool {
	switch strings.ToLower(v) {
	case "", "0", "false", "no", "off":
		return false
	}
	return true
}
