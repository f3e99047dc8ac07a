package evals

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/reprompt/reprompt/evals/check"
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
//
// The variables DatasetEnv and KEnv, set, replace the eval's cases and
// its K (as "reprompt eval run --dataset FILE --k N" does); ProgressEnv
// has the eval report each run as it ends, and StepsEnv write each run's
// steps.
func (e *Eval[In, Out]) Test(t *testing.T, min Threshold) *Report {
	t.Helper()
	if interrupted.Load() {
		t.Skipf("evals: %s: not run, an eval before it was interrupted", e.Name)
	}
	ec, err := e.fromEnv()
	if err != nil {
		t.Fatalf("evals: %s: %v", e.Name, err)
		return nil
	}
	e = ec
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
// Eval.Test write each eval's result file there (OutPath), as "reprompt
// eval run" has it do:
//
//	REPROMPT_EVAL_OUT=out go test ./triage -run '^TestTriageEval$'
//	reprompt eval report out/triage.json --baseline baseline.json
const OutEnv = "REPROMPT_EVAL_OUT"

// OutPath returns the file that Eval.Test writes the report of the eval
// named name to, in the directory dir: dir/<name>.json, the name made a
// file name as Recordings makes a case's.
func OutPath(dir, name string) string { return filepath.Join(dir, fileName(name)+".json") }

// DatasetEnv is the environment variable that, set to a dataset file,
// makes Eval.Test run the cases Load reads from it instead of the eval's
// own (a relative path is relative to the package's directory, where go
// test runs the test):
//
//	REPROMPT_EVAL_DATASET=$PWD/more.yaml go test ./triage -run '^TestTriageEval$'
//
// It replaces the cases of every eval the test binary runs: select one
// with -run.
const DatasetEnv = "REPROMPT_EVAL_DATASET"

// KEnv is the environment variable that, set to a number n > 0, makes
// Eval.Test run each case n times instead of the eval's K (PassK is
// then at most n).
const KEnv = "REPROMPT_EVAL_K"

// StepsEnv is the environment variable that, set to a directory, makes
// Eval.Test write each run's steps there as a golden step file
// (snapshots.Format), at StepsPath: "reprompt eval run" renders each as a
// page of the step viewer, which the report links to.
const StepsEnv = "REPROMPT_EVAL_STEPS"

// StepsPath returns the golden step file that Eval.Test writes the steps
// of run (from 0) of the case named caseName, of the eval named eval, to
// in the directory dir (StepsEnv): dir/<eval>/<case>/run-<n>.txtar, the
// names made file names as Recordings makes a case's.
func StepsPath(dir, eval, caseName string, run int) string {
	return filepath.Join(dir, fileName(eval), fileName(caseName), fmt.Sprintf("run-%d.txtar", run))
}

// writeSteps is the check, added to the eval's, that writes a run's
// steps to the StepsPath of dir; it never fails the run (a file not
// written has no link).
func writeSteps(dir, eval string) check.Check {
	return check.CheckFunc("steps", func(_ context.Context, tr *check.Trajectory) error {
		path := StepsPath(dir, eval, tr.Case, tr.Run)
		if os.MkdirAll(filepath.Dir(path), 0o755) == nil {
			_ = os.WriteFile(path, snapshots.Format(tr.Result.Steps, tr.Err), 0o644)
		}
		return nil
	})
}

// fromEnv returns e with the cases and K that DatasetEnv and KEnv ask
// for, and writing its runs' steps where StepsEnv asks; e itself if they
// are not set.
func (e *Eval[In, Out]) fromEnv() (*Eval[In, Out], error) {
	path, k, steps := os.Getenv(DatasetEnv), os.Getenv(KEnv), os.Getenv(StepsEnv)
	if path == "" && k == "" && steps == "" {
		return e, nil
	}
	ec := *e
	if steps != "" {
		ec.Checks = append(slices.Clip(e.Checks), writeSteps(steps, e.Name))
	}
	if path != "" {
		cases, err := Load[In, Out](path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", DatasetEnv, err)
		}
		ec.Cases = cases
	}
	if k != "" {
		n, err := strconv.Atoi(k)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%s=%q: want a number of runs > 0", KEnv, k)
		}
		ec.K = n
	}
	return &ec, nil
}

// interrupted is set once an eval was interrupted (ProgressEnv): the
// evals after it in the test binary are skipped.
var interrupted atomic.Bool

// runForTest runs e for Test: its progress reported to the file
// ProgressEnv names, if it is set, and then stopped cleanly by an
// interrupt; its report written to the file OutEnv asks for, if it does.
func (e *Eval[In, Out]) runForTest(t *testing.T) (*Report, error) {
	ctx := t.Context()
	dir := os.Getenv(OutEnv)
	prog, err := openProgress(os.Getenv(ProgressEnv), e.Name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ProgressEnv, err)
	}
	if prog == nil {
		return e.runToFile(ctx, t, dir)
	}
	defer prog.close()
	// The handler first: an interrupt once the start is reported stops
	// the eval, not the test binary.
	sctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	prog.write(Progress{Event: "start", Cases: len(e.Cases), K: max(e.K, 1)})
	ec := *e
	if models := e.Models; models != nil {
		// A run whose model is not made ends before the run hook.
		ec.Models = func(name string, run int) (llm.Model, error) {
			m, err := models(name, run)
			if err != nil {
				prog.write(Progress{Event: "run", Case: name, Run: run, Failed: []string{"model"}})
			}
			return m, err
		}
	}
	rep, err := ec.runToFile(withRunHook(sctx, prog.write), t, dir)
	// (stop cancels sctx too.)
	interrupt := sctx.Err() != nil && ctx.Err() == nil
	// The handler goes before the end is reported: a second interrupt,
	// once the result is written, ends the test binary.
	stop()
	end := Progress{Event: "end"}
	if rep != nil {
		end.Stopped, end.LatencyMS = rep.Stopped, rep.ElapsedMS
		if dir != "" {
			end.Result = OutPath(dir, e.Name)
		}
	}
	if interrupt {
		interrupted.Store(true)
		err = errors.New("interrupted; the result holds the runs measured before")
	}
	if err != nil {
		end.Error = err.Error()
	}
	prog.write(end)
	return rep, err
}

// runToFile runs e with ctx, its report streamed to the file of e in
// dir (OutPath) if dir is not "", the cases' runs still kept in the
// report for the failures' logs.
func (e *Eval[In, Out]) runToFile(ctx context.Context, t *testing.T, dir string) (*Report, error) {
	if dir == "" {
		return e.Run(ctx, nil)
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
	ec.Goldens = true // for the failures' logs, and the report's page
	ec.OnCase = func(c *CaseResult) {
		runs = append(runs, slices.Clone(c.Runs))
		if e.OnCase != nil {
			e.OnCase(c)
		}
	}
	rep, err := ec.Run(ctx, f)
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
//
// Two cases whose names make one file name ("a/b" and "a b") would share
// their recordings: the runs of the second fail, naming both.
func Recordings(dir string, live func() (llm.Model, error)) ModelFunc {
	var mu sync.Mutex
	owner := map[string]string{} // a file name → the case whose recordings it holds
	return func(name string, run int) (llm.Model, error) {
		file := fileName(name)
		mu.Lock()
		first, taken := owner[file]
		if !taken {
			owner[file] = name
		}
		mu.Unlock()
		if taken && first != name {
			return nil, fmt.Errorf("cases %q and %q would share the recordings %s: rename one", first, name, filepath.Join(dir, file))
		}
		path := filepath.Join(dir, file, fmt.Sprintf("run-%d.json", run))
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

var unsafeName = regexp.MustCompile(`[^\p{L}\p{M}\p{N}._-]+`)

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
