package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/internal/callsite"
	"github.com/reprompt/reprompt/prompt"
)

// runCalls runs the tool calls of reply that have no result in given, and
// returns all results in call order, saving a checkpoint as each completes.
// A call cut short by the cancellation of ctx is not recorded as completed.
func (r *Runner) runCalls(ctx context.Context, reply defs.Message, offered []ToolSpec, given map[string]defs.ToolResult) ([]defs.ToolResult, error) {
	calls := reply.ToolCalls
	var mu sync.Mutex
	var saveErr error
	completed := make([]defs.ToolResult, 0, len(calls))
	for _, c := range calls {
		if res, ok := given[c.ID]; ok {
			completed = append(completed, res)
		}
	}
	var todo []defs.ToolCall
	for _, c := range calls {
		if _, ok := given[c.ID]; !ok {
			todo = append(todo, c)
		}
	}
	done := func(i int, res defs.ToolResult) {
		if ctx.Err() != nil && res.IsError {
			return // cancelled: on resume it counts as not completed
		}
		mu.Lock()
		defer mu.Unlock()
		completed = append(completed, res)
		if err := r.savePending(ctx, reply, completed); err != nil && saveErr == nil {
			saveErr = err
		}
	}
	out := r.runTools(ctx, todo, offered, done)
	if saveErr != nil {
		return nil, &StepError{Op: "checkpoint", Err: saveErr}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	results := make([]defs.ToolResult, len(calls))
	j := 0
	for i, c := range calls {
		if res, ok := given[c.ID]; ok {
			results[i] = res
		} else {
			results[i] = out[j]
			j++
		}
	}
	return results, nil
}

// runTools runs the calls, concurrently when there are several, and returns
// their results in call order. Only the tools offered in this step's request
// are run. done, if set, is called as each result is ready (from the
// goroutine that ran it).
func (r *Runner) runTools(ctx context.Context, calls []defs.ToolCall, offered []ToolSpec, done func(i int, res defs.ToolResult)) []defs.ToolResult {
	ctx = prompt.WithAgentRunner(ctx, r)
	results := make([]defs.ToolResult, len(calls))
	run := func(i int) {
		results[i] = r.runTool(ctx, calls[i], offered)
		if done != nil {
			done(i, results[i])
		}
	}
	if len(calls) == 1 {
		run(0)
		return results
	}
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() { run(i) })
	}
	wg.Wait()
	return results
}

func (r *Runner) runTool(ctx context.Context, c defs.ToolCall, offered []ToolSpec) defs.ToolResult {
	res := defs.ToolResult{CallID: c.ID, Name: c.Name, Arguments: c.Arguments}
	fail := func(format string, args ...any) defs.ToolResult {
		res.Content, res.IsError = "error: "+fmt.Sprintf(format, args...), true
		return res
	}
	def, declared := r.p.Registry().Lookup(defs.KindTool, c.Name)
	if !declared {
		names := make([]string, len(offered))
		for i, t := range offered {
			names[i] = t.Name
		}
		return fail("unknown tool %q; the tools available are: %s", c.Name, strings.Join(names, ", "))
	}
	if !slices.ContainsFunc(offered, func(t ToolSpec) bool { return t.Name == c.Name }) {
		return fail("tool %q is disabled at this step and was not run", c.Name)
	}
	if def.Tool.Validate != nil {
		if err := def.Tool.Validate(c.Arguments); err != nil {
			return fail("%v", err)
		}
	}
	out, err := r.callTool(prompt.WithCallID(ctx, c.ID), def.Tool, c.Arguments)
	if err != nil {
		r.noteToolError(c.ID, err)
		var pe *ToolPanicError
		var te *ToolTimeoutError
		if errors.As(err, &pe) {
			return fail("%s", pe.modelText()) // without the Go source location
		}
		if errors.As(err, &te) || prompt.IsArgumentsError(err) {
			return fail("%v", err) // these name the tool already
		}
		return fail("tool %q failed: %v", c.Name, err)
	}
	res.Content = out
	return res
}

// ToolPanicError is a tool that panicked. The model receives an error
// result saying that the tool panicked and with what value, without Site:
// the Go source location is for the developer, in Step.ToolErrors.
type ToolPanicError struct {
	Tool  string
	Site  string // where the panic happened, "file.go:12"
	Value any
}

func (e *ToolPanicError) Error() string {
	return fmt.Sprintf("tool %q panicked at %s: %v", e.Tool, e.Site, e.Value)
}

// modelText is the error text the model gets: no source location, also
// when the value is a hook misuse (which names its call site).
func (e *ToolPanicError) modelText() string {
	v := e.Value
	if me, ok := v.(*prompt.MisuseError); ok {
		v = me.Hook + ": " + me.Err.Error()
	}
	return fmt.Sprintf("tool %q panicked: %v", e.Tool, v)
}

// ToolTimeoutError is a tool still running at Config.ToolTimeout.
type ToolTimeoutError struct {
	Tool    string
	Timeout string
}

func (e *ToolTimeoutError) Error() string {
	return fmt.Sprintf("tool %q did not finish within %s", e.Tool, e.Timeout)
}

func (r *Runner) callTool(ctx context.Context, t *defs.Tool, args []byte) (string, error) {
	if r.cfg.ToolTimeout <= 0 {
		return safeCall(ctx, t, args)
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.ToolTimeout)
	defer cancel()
	type result struct {
		out string
		err error
	}
	ch := make(chan result, 1)
	go func() {
		out, err := safeCall(ctx, t, args)
		ch <- result{out, err}
	}()
	select {
	case res := <-ch:
		return res.out, res.err
	case <-ctx.Done():
		if ctx.Err() == context.DeadlineExceeded {
			return "", &ToolTimeoutError{Tool: t.Name, Timeout: r.cfg.ToolTimeout.String()}
		}
		return "", ctx.Err()
	}
}

func safeCall(ctx context.Context, t *defs.Tool, args []byte) (out string, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &ToolPanicError{Tool: t.Name, Site: callsite.Panic().String(), Value: v}
		}
	}()
	return t.Call(ctx, args)
}

// RunAgent runs a sub-agent to completion with the same model and
// configuration, and returns its final answer. It implements
// prompt.AgentRunner.
func (r *Runner) RunAgent(ctx context.Context, name string, fn prompt.Func, task string) (string, error) {
	cfg := r.cfg
	cfg.OnDelta = nil
	// A sub-agent runs inside one tool call of the parent, whose checkpoints
	// record its answer: it must not write checkpoints into the parent's
	// session.
	cfg.Store, cfg.SessionID = nil, ""
	if cfg.AgentMaxSteps != 0 {
		cfg.MaxSteps = cfg.AgentMaxSteps
	}
	sub := New(r.model, fn, cfg)
	sub.p = prompt.New(task)
	sub.transcript = []defs.Message{defs.UserMessage(task)}
	sub.p.MarkMessagesSeen([]string{prompt.MessageID(defs.RoleUser, task)})
	res, err := sub.Run(ctx)
	// The sub-agent's model calls count in the parent's usage, cost and
	// limits, whether it succeeded or not.
	sub.usageMu.Lock()
	u := sub.usage
	sub.usageMu.Unlock()
	r.account(u)
	if err != nil {
		return "", fmt.Errorf("sub-agent %q: %w", name, err)
	}
	return res.Text, nil
}
