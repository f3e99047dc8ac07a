package evals

import (
	"context"
	"encoding/json"
	"os"
	"sync"

	"github.com/reprompt/reprompt/evals/check"
	"github.com/reprompt/reprompt/llm"
)

// ProgressEnv is the environment variable that, set to a file, makes
// Eval.Test append its progress to that file as it runs, a Progress a
// line (JSON Lines): "reprompt eval run" sets it and draws a progress
// bar of it. Under it, Test also stops an eval cleanly at an interrupt
// (SIGINT), as a cancelled context does (Report.Stopped "cancelled"),
// so that the result file holds the runs measured.
const ProgressEnv = "REPROMPT_EVAL_PROGRESS"

// Progress is one line of the progress file (ProgressEnv).
type Progress struct {
	// Event is "start" (the eval starts: Cases, K), "run" (a run ended:
	// Case, Run, Pass, ...) or "end" (the eval ended: Result, Stopped,
	// Error). A run that an eval's stop cut short has no line.
	Event string `json:"event"`
	Eval  string `json:"eval"`
	Cases int    `json:"cases,omitempty"`
	K     int    `json:"k,omitempty"`

	Case string `json:"case,omitempty"`
	Run  int    `json:"run,omitempty"`
	Pass bool   `json:"pass,omitempty"`
	// Failed names the checks the run failed, in the order they ran.
	Failed []string `json:"failed,omitempty"`
	// Tokens and Cost are the run's and its judges'; LatencyMS the run's
	// wall time, at the end the eval's.
	Tokens    int     `json:"tokens,omitempty"`
	Cost      float64 `json:"cost_usd,omitempty"`
	LatencyMS float64 `json:"latency_ms,omitempty"`

	// Result is the result file written (OutEnv), "" if none.
	Result  string `json:"result,omitempty"`
	Stopped string `json:"stopped,omitempty"`
	Error   string `json:"error,omitempty"`
}

// runHookKey keys the function that runOne calls with each run as it
// ends (reportRun): Test's progress.
type runHookKey struct{}

func withRunHook(ctx context.Context, f func(Progress)) context.Context {
	return context.WithValue(ctx, runHookKey{}, f)
}

// reportRun tells ctx's run hook, if any, that run of the case name
// ended, as a "run" Progress. It is called from the goroutines that make
// the runs, with the fields of the run's RunResult.
func reportRun(ctx context.Context, name string, run int, pass bool, failures []check.Failure, grades []check.Grade, u llm.Usage, cost, latencyMS float64) {
	f, ok := ctx.Value(runHookKey{}).(func(Progress))
	if !ok {
		return
	}
	ev := Progress{Event: "run", Case: name, Run: run, Pass: pass, Tokens: u.Total(), Cost: cost, LatencyMS: latencyMS}
	for _, g := range grades {
		ev.Tokens += g.Usage.Total()
		ev.Cost += g.Cost
	}
	for _, fl := range failures {
		ev.Failed = append(ev.Failed, fl.Check)
	}
	f(ev)
}

// progressFile appends Progress lines to a file, one write a line (the
// file is opened to append: lines of concurrent writers do not mix).
type progressFile struct {
	mu   sync.Mutex
	f    *os.File
	eval string
}

func openProgress(path, eval string) (*progressFile, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return &progressFile{f: f, eval: eval}, nil
}

// write writes p; an error is dropped: progress is a display, never the
// eval's failure.
func (p *progressFile) write(ev Progress) {
	if p == nil {
		return
	}
	ev.Eval = p.eval
	b, err := json.Marshal(ev)
	if err != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, _ = p.f.Write(append(b, '\n'))
}

func (p *progressFile) close() {
	if p != nil {
		p.f.Close()
	}
}
