package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/internal/callsite"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/state"
)

// runCalls runs the tool calls of reply that have no result in given, and
// returns all results in call order.
//
// Each call records its state changes in a transaction of its own (see
// state.Tx). They are applied in call order as the calls finish: a call's
// changes, and its result in the checkpoint, wait until every call before it
// has finished. So the state a step ends with does not depend on timing,
// and a checkpoint never holds the changes of a call whose result it does
// not hold. A call cut short by the cancellation of ctx is not recorded as
// completed, and its changes are dropped.
func (r *Runner) runCalls(ctx context.Context, reply defs.Message, offered []ToolSpec, given map[string]defs.ToolResult) ([]defs.ToolResult, error) {
	calls := reply.ToolCalls
	store := r.p.Store()
	results := make([]defs.ToolResult, len(calls))
	finished := make([]bool, len(calls))
	txs := make([]*state.Tx, len(calls))
	var todo []defs.ToolCall
	var at []int // at[j]: index in calls of todo[j]
	for i, c := range calls {
		if res, ok := given[c.ID]; ok {
			results[i], finished[i] = res, true
			continue
		}
		todo = append(todo, c)
		at = append(at, i)
		txs[i] = store.Begin()
	}
	var mu sync.Mutex
	var saveErr error
	committed := 0 // calls[:committed] are finished and their changes applied
	advance := func() {
		from := committed
		for committed < len(calls) && finished[committed] {
			if tx := txs[committed]; tx != nil {
				if err := tx.Commit(); err != nil {
					res := &results[committed]
					res.Content, res.IsError = fmt.Sprintf("error: tool %q: its state change could not be applied: %v", res.Name, err), true
				}
			}
			committed++
		}
		if committed == from {
			return
		}
		var durable []defs.ToolResult
		for i := range calls {
			if i < committed || (txs[i] == nil && finished[i]) {
				durable = append(durable, results[i])
			}
		}
		if err := r.savePending(ctx, reply, durable); err != nil && saveErr == nil {
			saveErr = err
		}
	}
	done := func(j int, res defs.ToolResult) {
		i := at[j]
		if ctx.Err() != nil && res.IsError {
			txs[i].Discard() // cancelled: on resume it counts as not completed
			return
		}
		txs[i].Close()
		mu.Lock()
		defer mu.Unlock()
		results[i], finished[i] = res, true
		advance()
	}
	r.runTools(ctx, todo, offered, txs, at, done)
	if saveErr != nil {
		return nil, &StepError{Op: "checkpoint", Err: saveErr}
	}
	if err := ctx.Err(); err != nil {
		for _, tx := range txs[committed:] {
			if tx != nil {
				tx.Discard()
			}
		}
		return nil, err
	}
	return results, nil
}

// runTools runs the calls, concurrently when there are several, and returns
// their results in call order. Only the tools offered in this step's request
// are run. txs[at[i]], if set, records the state changes of calls[i]; done,
// if set, is called as each result is ready (from the goroutine that ran
// it).
func (r *Runner) runTools(ctx context.Context, calls []defs.ToolCall, offered []ToolSpec, txs []*state.Tx, at []int, done func(i int, res defs.ToolResult)) []defs.ToolResult {
	ctx = prompt.WithAgentRunner(ctx, r)
	results := make([]defs.ToolResult, len(calls))
	run := func(i int) {
		var tx *state.Tx
		if txs != nil {
			tx = txs[at[i]]
		}
		tctx, span := r.observeTool(ctx, calls[i])
		results[i] = r.runTool(tctx, calls[i], offered, tx)
		r.observeToolEnd(span, results[i])
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

func (r *Runner) runTool(ctx context.Context, c defs.ToolCall, offered []ToolSpec, tx *state.Tx) defs.ToolResult {
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
	} else if len(c.Arguments) > 0 && !json.Valid(c.Arguments) {
		return fail("the arguments of tool %q are not valid JSON", c.Name)
	}
	out, err := r.callTool(prompt.WithCallID(ctx, c.ID), def.Tool, c.Arguments, tx)
	r.observeToolError(ctx, err)
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

func (r *Runner) callTool(ctx context.Context, t *defs.Tool, args []byte, tx *state.Tx) (string, error) {
	if r.cfg.ToolTimeout <= 0 {
		return safeCall(ctx, t, args, tx)
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.ToolTimeout)
	defer cancel()
	type result struct {
		out string
		err error
	}
	ch := make(chan result, 1)
	go func() {
		out, err := safeCall(ctx, t, args, tx)
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

// safeCall calls t on the calling goroutine, bound to tx if set, turning a
// panic into a *ToolPanicError.
func safeCall(ctx context.Context, t *defs.Tool, args []byte, tx *state.Tx) (out string, err error) {
	if tx != nil {
		defer tx.Bind()()
	}
	defer func() {
		if v := recover(); v != nil {
			err = &ToolPanicError{Tool: t.Name, Site: callsite.Panic().String(), Value: v}
		}
	}()
	return t.Call(ctx, args)
}

// RunAgent runs a sub-agent to completion with the same model and
// configuration, and returns its final answer. Its requests carry its name
// (Request.Agent), and the records of its steps join the parent's step
// (Step.Agents) under the tool call that ran it. It implements
// prompt.AgentRunner.
func (r *Runner) RunAgent(ctx context.Context, name string, fn prompt.Func, task string) (string, error) {
	cfg := r.cfg
	cfg.OnDelta = nil
	// A sub-agent runs inside one tool call of the parent, whose checkpoints
	// record its answer: it must not write checkpoints into the parent's
	// session.
	cfg.Store, cfg.SessionID = nil, ""
	cfg.Name = name
	if cfg.AgentMaxSteps != 0 {
		cfg.MaxSteps = cfg.AgentMaxSteps
	}
	sub := New(r.model, fn, cfg)
	sub.agent = name
	sub.p = prompt.New(task)
	sub.transcript = []defs.Message{defs.UserMessage(task)}
	sub.p.MarkMessagesSeen([]string{prompt.MessageID(defs.RoleUser, task)})
	res, err := sub.Run(ctx)
	r.recordAgent(prompt.CallID(ctx), name, res.Steps, err)
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
