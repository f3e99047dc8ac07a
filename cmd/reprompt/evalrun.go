package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/reprompt/reprompt/cmd/reprompt/internal/showtext"
	"github.com/reprompt/reprompt/cmd/reprompt/internal/viewer"
	"github.com/reprompt/reprompt/evals"
)

// evalRunOptions are the flags of eval run.
type evalRunOptions struct {
	pkg      string
	run      string   // -run: the tests go test runs
	dataset  string   // --dataset: the cases, instead of the evals' own
	k        int      // --k: the runs a case, instead of the evals' own (0: theirs)
	baseline string   // --baseline: the result to compare with
	out      string   // -o: the directory of the results and reports
	live     bool     // --live: -tags live, REPROMPT_EVAL=live
	goFlags  []string // after --: go test's own flags
}

// The timing of eval run, variables for the tests.
var (
	// tickEvery is how often the progress file is read.
	tickEvery = 100 * time.Millisecond
	// plainEvery is how often a plain progress line is written while runs end.
	plainEvery = 5 * time.Second
	// killAfter is how long an interrupted go test is given to write what
	// it measured before it is killed.
	killAfter = 10 * time.Second
)

// evalRun runs the evals of a Go package with go test, their progress
// drawn on stdout as they run, then writes each eval's table, result file
// and HTML page (evalReport) into o.out, compared with the baseline if
// given, and the pages of its runs' steps. go test's output is shown on
// stderr when it fails (a build error, a panic, a case below its
// threshold), or when asked for (-- -v). ctx done (an interrupt) stops
// the evals cleanly: what they measured is reported, and the error says
// so.
func evalRun(ctx context.Context, o evalRunOptions, stdout, stderr io.Writer) error {
	var base *evals.Report
	if o.baseline != "" {
		var err error
		// Read first: a result written by this run may replace the file.
		if base, err = evals.ReadReport(o.baseline); err != nil {
			return fmt.Errorf("baseline: %w", err)
		}
	}
	dir, err := filepath.Abs(o.out)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	env := append(os.Environ(), evals.OutEnv+"="+dir)
	if o.dataset != "" {
		path, err := filepath.Abs(o.dataset)
		if err != nil {
			return err
		}
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("dataset: %w", err)
		}
		env = append(env, evals.DatasetEnv+"="+path)
	}
	if o.k > 0 {
		env = append(env, evals.KEnv+"="+strconv.Itoa(o.k))
	}
	args := []string{"test", "-count=1"}
	if o.live {
		args = append(args, "-tags", "live")
		if os.Getenv(evals.ModeEnv) != "record" {
			env = append(env, evals.ModeEnv+"=live")
		}
	}
	if o.run != "" {
		args = append(args, "-run", o.run)
	}
	// A directory is the package in it, of its own module (go test runs
	// there): not an import path (examples/structured is not the standard
	// library's), and not only of the current directory's module.
	pkgDir := ""
	shown := append(append(slices.Clone(args), o.pkg), o.goFlags...)
	if fi, err := os.Stat(o.pkg); err == nil && fi.IsDir() {
		pkgDir = o.pkg
		args = append(args, ".")
	} else {
		args = append(args, o.pkg)
	}
	args = append(args, o.goFlags...)

	tmp, err := os.MkdirTemp("", "reprompt-eval-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	progress := filepath.Join(tmp, "progress.jsonl")
	pf, err := os.Create(progress)
	if err != nil {
		return err
	}
	defer pf.Close()
	steps := filepath.Join(tmp, "steps")
	env = append(env, evals.ProgressEnv+"="+progress, evals.StepsEnv+"="+steps)

	cmd := exec.Command("go", args...)
	cmd.Env, cmd.Dir = env, pkgDir
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	ownGroup(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("go test: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	view := newProgressView(stdout, isTerminal(stdout))
	view.every, view.waiting = plainEvery, "go "+joinArgs(shown)
	tail := &progressTail{f: pf}
	feed := func() {
		for _, ev := range tail.read() {
			view.add(ev)
		}
	}
	tick := time.NewTicker(tickEvery)
	defer tick.Stop()
	var (
		werr        error
		interrupted bool
		again       bool // the second interrupt, sent
		kill        <-chan time.Time
		done        = ctx.Done()
	)
wait:
	for {
		select {
		case werr = <-exited:
			break wait
		case <-done:
			interrupted, done = true, nil
			interrupt(cmd)
			kill = time.After(killAfter)
		case <-kill:
			killGroup(cmd)
		case <-tick.C:
			feed()
			view.tick()
			// Once the evals under way have written what they measured
			// (their end), the test binary is ended: the tests after them
			// are not run.
			if interrupted && !again && view.live() == nil {
				interrupt(cmd)
				again = true
			}
		}
	}
	feed()
	view.done()

	var (
		results []string
		errs    []error
	)
	failed := werr != nil && !interrupted
	if failed || slices.Contains(o.goFlags, "-v") {
		fmt.Fprintf(stderr, "go %s:\n%s", joinArgs(shown), printableOutput(output.String()))
	}
	if failed {
		errs = append(errs, fmt.Errorf("go test %s failed: %w", o.pkg, werr))
	}
	for _, e := range view.evals {
		switch {
		case e.end == nil: // the test binary died (a panic, killed)
			errs = append(errs, fmt.Errorf("eval %s did not end: its result is cut short", showtext.Printable(e.name)))
		case e.end.Result != "" && !slices.Contains(results, e.end.Result):
			results = append(results, e.end.Result)
		}
	}
	if len(results) == 0 && werr == nil {
		errs = append(errs, fmt.Errorf("no eval ran in %s (evals.Eval.Test writes the result; -run selects the tests)", o.pkg))
	}
	compared := false
	for i, path := range results {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		rep, err := evals.ReadReport(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		b := base
		if b != nil && len(results) > 1 && b.Eval != rep.Eval {
			b = nil
		}
		compared = compared || b != nil
		links, err := writeStepPages(steps, dir, rep)
		if err != nil {
			errs = append(errs, err)
		}
		if err := renderEval(rep, path, b, o.baseline, "", path, links, stdout); err != nil {
			errs = append(errs, err)
		}
		if n := countLinks(rep, links); n > 0 {
			fmt.Fprintf(stdout, "wrote the steps of %d %s in %s\n", n, plural(n, "run", "runs"), showtext.Printable(strings.TrimSuffix(path, ".json")+"-runs"))
		}
	}
	if base != nil && !compared && len(results) > 0 {
		errs = append(errs, fmt.Errorf("baseline %s: no eval named %q ran", o.baseline, base.Eval))
	}
	if interrupted {
		errs = append(errs, errors.New("interrupted: the results hold the runs measured before"))
	}
	return errors.Join(errs...)
}

// joinArgs writes args as a command line, quoting the ones that need it.
func joinArgs(args []string) string {
	var b strings.Builder
	b.WriteString(args[0])
	for _, a := range args[1:] {
		b.WriteByte(' ')
		if a == "" || strings.ContainsAny(a, " \t\"'$\\*?[]^|&;<>()") {
			a = strconv.Quote(a)
		}
		b.WriteString(a)
	}
	return b.String()
}

// writeStepPages writes the page of the steps of each run of rep that
// wrote its golden step file into steps (evals.StepsEnv), with that file,
// to dir/<eval>-runs/<case>/run-<n>.html and .txtar, and returns the
// links of the report to them: a failed run's, to the step its first
// check failed at.
func writeStepPages(steps, dir string, rep *evals.Report) (func(c, run int) string, error) {
	links := map[[2]int]string{}
	for c, cr := range rep.Cases {
		for _, r := range cr.Runs {
			src := evals.StepsPath(steps, rep.Eval, cr.Name, r.Run)
			data, err := os.ReadFile(src)
			if err != nil {
				continue // no steps: the run never started (its model, not made)
			}
			rel, err := filepath.Rel(steps, src)
			if err != nil {
				return nil, err
			}
			first, rest, _ := strings.Cut(filepath.ToSlash(rel), "/")
			rel = filepath.FromSlash(first + "-runs/" + rest)
			golden := filepath.Join(dir, rel)
			if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
				return nil, err
			}
			if err := os.WriteFile(golden, data, 0o644); err != nil {
				return nil, err
			}
			run, err := viewer.FromFile(golden)
			if err != nil {
				continue // a run cut short: its report still shows its failures
			}
			run.Title = fmt.Sprintf("%s · %s · run %d", rep.Eval, cr.Name, r.Run)
			page := strings.TrimSuffix(golden, ".txtar") + ".html"
			if err := writeHTML(page, run); err != nil {
				return nil, err
			}
			segs := strings.Split(filepath.ToSlash(strings.TrimSuffix(rel, ".txtar")+".html"), "/")
			for i, s := range segs {
				segs[i] = url.PathEscape(s)
			}
			link := strings.Join(segs, "/")
			if len(r.Failures) > 0 && r.Failures[0].Step >= 0 {
				link += fmt.Sprintf("#step-%d", r.Failures[0].Step) // the step the first check failed at
			}
			links[[2]int{c, r.Run}] = link
		}
	}
	return func(c, run int) string { return links[[2]int{c, run}] }, nil
}

// countLinks counts the runs of rep that links gives a link.
func countLinks(rep *evals.Report, links func(c, run int) string) int {
	n := 0
	for c, cr := range rep.Cases {
		for _, r := range cr.Runs {
			if links != nil && links(c, r.Run) != "" {
				n++
			}
		}
	}
	return n
}
