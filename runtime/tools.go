package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/internal/callsite"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/state"
)

// Stage 6 of "A step" (doc.go): the tool calls of the reply run, each in
// its own state transaction, and their results join the transcript.

// runTools runs the tool calls of rec's reply that have no result in
// given, concurrently, results in call order, and records them in rec.
// The reply joins the transcript once they are done, followed by the
// results: until then checkpoints hold it as pending. stop reports a
// result of one of Config.StopTools.
func (r *Runner) runTools(ctx context.Context, rec *Step, offered []llm.ToolSpec, given map[string]defs.ToolResult) (stop bool, asks map[string]*prompt.AskError, err error) {
	n := rec.Number
	reply := rec.Reply
	calls := reply.Message.ToolCalls
	if len(calls) > 0 {
		rec.ToolResults, err = r.runCalls(ctx, reply.Message, offered, given, nil)
		rec.Agents = r.takeAgentRuns(calls)
		rec.ToolErrors = r.takeToolErrors()
		if se, ok := err.(*StepError); ok {
			se.Step = n // runCalls does not know the step's number
		}
		if err != nil {
			return false, nil, err
		}
		if err := r.takeMisuse(); err != nil {
			return false, nil, err
		}
		if asks := r.takeAsks(); len(asks) > 0 {
			return false, asks, nil // the step pauses for the answers (ask.go)
		}
	}
	r.grow(1 + len(rec.ToolResults))
	r.transcript = append(r.transcript, reply.Message)
	if len(calls) > 0 {
		for i := range rec.ToolResults {
			res := &rec.ToolResults[i]
			r.transcript = append(r.transcript, res.Message())
			if !res.IsError && slices.Contains(r.cfg.StopTools, res.Name) {
				stop = true
			}
		}
		r.lastTool = &rec.ToolResults[len(rec.ToolResults)-1]
	}
	return stop, nil, nil
}

// runCalls runs the tool calls of reply that have no result in given and
// are not held (awaiting approval), and returns all results in call order
// (a held call's is the zero result).
//
// Each call records its state changes in a transaction of its own (see
// state.Tx). They are applied in call order as the calls finish: a call's
// changes, and its result in the checkpoint, wait until every call before it
// has finished. So the state a step ends with does not depend on timing,
// and a checkpoint never holds the changes of a call whose result it does
// not hold. A call cut short by the cancellation of ctx is not recorded as
// completed, and its changes are dropped.
func (r *Runner) runCalls(ctx context.Context, reply defs.Message, offered []llm.ToolSpec, given map[string]defs.ToolResult, held map[string]bool) ([]defs.ToolResult, error) {
	b := r.newBatch(ctx, reply, offered)
	defer r.endBatch(b)
	store := r.p.Store()
	var todo []int
	some := len(given) > 0 || len(held) > 0 // not every call runs
	for i, c := range reply.ToolCalls {
		if res, ok := given[c.ID]; ok {
			b.slots[i] = callSlot{res: res, finished: true}
			continue
		}
		if held[c.ID] {
			// Finished as far as the order of state changes goes: the calls
			// after it apply theirs now, it applies its own when it runs.
			b.slots[i] = callSlot{held: true, finished: true}
			continue
		}
		b.slots[i].tx = store.Begin()
		if some {
			todo = append(todo, i)
		}
	}
	switch {
	case r.cfg.ToolExecutor != nil: // see executor.go
		if err := b.execute(r.cfg.ToolExecutor); err != nil {
			return nil, err
		}
	case !some && len(b.slots) == 1:
		b.run(0)
	case !some:
		var wg sync.WaitGroup
		for i := range b.slots {
			wg.Go(func() { b.run(i) })
		}
		wg.Wait()
	default:
		var wg sync.WaitGroup
		for _, i := range todo {
			wg.Go(func() { b.run(i) })
		}
		wg.Wait()
	}
	if b.saveErr != nil {
		return nil, &StepError{Op: OpCheckpoint, Err: b.saveErr}
	}
	if err := ctx.Err(); err != nil {
		for _, s := range b.slots[b.committed:] {
			if s.tx != nil {
				s.tx.Discard()
			}
		}
		return nil, err
	}
	r.recorder.noteCalls(b.slots)
	results := make([]defs.ToolResult, len(b.slots))
	for i := range b.slots {
		results[i] = b.slots[i].res
	}
	return results, nil
}

// newBatch returns the batch of the calls of reply. Without a
// ToolExecutor, the runner's batch and its slots are reused from reply to
// reply (see endBatch): nothing outside runCalls keeps them. An executor
// gets a batch of its own, as a ToolCalls it kept by mistake would use it
// after ExecuteTools.
func (r *Runner) newBatch(ctx context.Context, reply defs.Message, offered []llm.ToolSpec) *callBatch {
	n := len(reply.ToolCalls)
	if r.cfg.ToolExecutor != nil {
		// The executor's context carries the runner, for the sub-agent
		// tools it may call itself; runTool sets it for the calls it runs.
		return &callBatch{r: r, ctx: prompt.WithToolCall(ctx, r, ""), reply: reply, offered: offered, slots: make([]callSlot, n)}
	}
	b := r.batch
	r.batch = nil // a batch under way is not reused
	if b == nil {
		b = &callBatch{}
	}
	slots := b.slots
	if cap(slots) < n {
		slots = make([]callSlot, n)
	}
	b.r, b.ctx, b.reply, b.offered, b.slots = r, ctx, reply, offered, slots[:n]
	return b
}

// endBatch keeps b, once runCalls is done with it, for the next reply,
// without what it refers to.
func (r *Runner) endBatch(b *callBatch) {
	if r.cfg.ToolExecutor != nil {
		return
	}
	clear(b.slots)
	b.ctx, b.reply, b.offered, b.slots = nil, defs.Message{}, nil, b.slots[:0]
	b.committed, b.saveErr = 0, nil
	r.batch = b
}

// callBatch is the tool calls of one reply under way.
type callBatch struct {
	r       *Runner
	ctx     context.Context // with a ToolExecutor, carries the runner, for sub-agents
	reply   defs.Message
	offered []llm.ToolSpec
	slots   []callSlot // by call

	mu        sync.Mutex // guards what follows and the slots' res and finished
	committed int        // slots[:committed] are finished and their changes applied
	saveErr   error
}

type callSlot struct {
	res      defs.ToolResult
	tx       *state.Tx // nil for a result given by a checkpoint
	finished bool
	held     bool          // awaiting approval: no result
	claimed  bool          // ToolCalls.Finish is recording its result (see executor.go)
	dur      time.Duration // how long the call ran; 0 if it did not run here
}

// run runs call i, on the calling goroutine, and records its result.
func (b *callBatch) run(i int) {
	r, c, tx := b.r, b.reply.ToolCalls[i], b.slots[i].tx
	tctx, span := r.obs.toolStarted(b.ctx, c)
	var start time.Time
	if r.recorder.on { // only a step record keeps how long a call ran
		start = time.Now()
	}
	res := r.runTool(tctx, c, b.offered, tx)
	var dur time.Duration
	if r.recorder.on {
		dur = time.Since(start)
	}
	r.obs.toolEnded(span, res)
	if b.ctx.Err() != nil && res.IsError {
		tx.Discard() // cancelled: on resume it counts as not completed
		return
	}
	tx.Close()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.slots[i].res, b.slots[i].finished, b.slots[i].dur = res, true, dur
	b.advance()
}

// advance applies the changes of the calls finished in call order since the
// last advance and saves a checkpoint with their results. b.mu is held.
func (b *callBatch) advance() {
	from := b.committed
	for b.committed < len(b.slots) && b.slots[b.committed].finished {
		s := &b.slots[b.committed]
		if s.tx != nil {
			if err := s.tx.Commit(); err != nil {
				s.res.Content, s.res.IsError = fmt.Sprintf("error: tool %q: its state change could not be applied: %v", s.res.Name, err), true
			}
		}
		b.committed++
	}
	if b.committed == from || b.r.cfg.Store == nil {
		return
	}
	var durable []defs.ToolResult
	for i, s := range b.slots {
		if !s.held && (i < b.committed || (s.tx == nil && s.finished)) {
			durable = append(durable, s.res)
		}
	}
	if err := b.r.savePending(b.ctx, b.reply, durable); err != nil && b.saveErr == nil {
		b.saveErr = err
	}
}

func (r *Runner) runTool(ctx context.Context, c defs.ToolCall, offered []llm.ToolSpec, tx *state.Tx) defs.ToolResult {
	res := defs.ToolResult{CallID: c.ID, Name: c.Name, Arguments: c.Arguments}
	fail := func(format string, args ...any) defs.ToolResult {
		res.Content, res.IsError = "error: "+fmt.Sprintf(format, args...), true
		return res
	}
	def, declared := r.c().Registry().Lookup(defs.KindTool, c.Name)
	if !declared && r.isAnswerCall(c.Name) {
		return r.answerResult(c)
	}
	if !declared {
		names := make([]string, len(offered))
		for i, t := range offered {
			names[i] = t.Name
		}
		return fail("unknown tool %q; the tools available are: %s", c.Name, strings.Join(names, ", "))
	}
	if !slices.ContainsFunc(offered, func(t llm.ToolSpec) bool { return t.Name == c.Name }) {
		if r.cfg.StableTools { // the request listed it: say why it did not run
			return fail("tool %q is not available now and was not run; it may be available at a later step", c.Name)
		}
		return fail("tool %q is disabled at this step and was not run", c.Name)
	}
	if def.Tool.Validate != nil {
		if err := def.Tool.Validate(c.Arguments); err != nil {
			return fail("%v", err)
		}
	} else if len(c.Arguments) > 0 && !json.Valid(c.Arguments) {
		return fail("the arguments of tool %q are not valid JSON", c.Name)
	}
	// The call's context carries its id, the runner of the sub-agents it
	// may start, and its transaction: the state changes made with it (by
	// the tool, by goroutines it starts, by a sub-agent it runs and that
	// sub-agent's tools) are recorded in tx (see state.Tx).
	tctx := prompt.WithToolCall(ctx, r, c.ID, r.answersFor(c.ID)...)
	if tx != nil {
		tctx = state.ContextWithTx(tctx, tx)
	}
	out, err := r.callTool(tctx, def.Tool, c.Arguments)
	if ae, ok := errors.AsType[*prompt.AskError](err); ok {
		// The call asks the user a question (ask.go): it runs again once
		// answered, so what it changed so far is dropped.
		if tx != nil {
			tx.Discard()
		}
		r.noteAsk(c.ID, ae)
		return fail("tool %q asks the user %q", c.Name, ae.Question.Text) // never in the transcript: the step pauses
	}
	r.obs.toolFailed(ctx, err)
	if err != nil {
		r.noteToolError(c.ID, err)
		var pe *ToolPanicError
		var te *ToolTimeoutError
		var ae *prompt.ArgumentsError
		if errors.As(err, &pe) {
			if misuse := programmerError(pe); misuse != nil {
				r.noteMisuse(misuse) // the run fails with it (see runTools)
			}
			return fail("%s", pe.modelText()) // without the Go source location
		}
		if errors.As(err, &te) || errors.As(err, &ae) {
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

// Unwrap returns the panic value when it is an error, as PanicError's does.
func (e *ToolPanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
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

// safeCall calls t on the calling goroutine, turning a panic into a
// *ToolPanicError.
func safeCall(ctx context.Context, t *defs.Tool, args []byte) (out string, err error) {
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
	// The run's callbacks are the parent's: they are called on the goroutine
	// that drives it (see the package doc), and a sub-agent runs in a tool
	// call's goroutine, in parallel with others.
	cfg.OnDelta, cfg.StopWhen = nil, nil
	// A sub-agent runs inside one tool call of the parent, whose checkpoints
	// record its answer: it must not write checkpoints into the parent's
	// session.
	cfg.Store, cfg.SessionID = nil, ""
	cfg.Name = name
	if cfg.AgentMaxSteps != 0 {
		cfg.MaxSteps = cfg.AgentMaxSteps
	}
	sub := NewAgent(r.model, fn, cfg, name, task)
	sub.sessionID = r.sessionID // its requests belong to the parent's session
	res, err := sub.Run(ctx)
	steps := res.Steps
	// A sub-agent whose tool asks the user (prompt.Ask) is answered
	// through its parent: its questions get the answers the parent's call
	// was given, in order, and the first one without an answer pauses the
	// parent's call (the sub-agent runs again from its start, answers and
	// all, once that is answered: see ask.go).
	answers := r.answersFor(prompt.CallID(ctx))
	for used := 0; err == nil && len(res.Awaiting) > 0; used++ {
		a := res.Awaiting[0]
		if a.Question == "" {
			// A call that needs approval: a sub-agent cannot wait for a
			// person's decision inside one tool call.
			err = errors.Join(&SubAgentApprovalError{Agent: name, Call: a}, sub.Close())
			break
		}
		if used == len(answers) {
			r.recordAgent(prompt.CallID(ctx), name, steps, nil)
			r.account(sub.totalUsage())
			_ = sub.Close()
			return "", &prompt.AskError{Question: prompt.Question{Text: a.Question, Schema: a.Schema}, Index: used}
		}
		if err = sub.Answer(a.CallID, answers[used]); err != nil {
			_ = sub.Close()
			break
		}
		res, err = sub.Run(ctx)
		steps = append(steps, res.Steps...)
	}
	r.recordAgent(prompt.CallID(ctx), name, steps, err)
	// The sub-agent's model calls count in the parent's usage, cost and
	// limits, whether it succeeded or not.
	r.account(sub.totalUsage())
	if err != nil {
		return "", fmt.Errorf("sub-agent %q: %w", name, err)
	}
	return res.Text, nil
}

// totalUsage returns the usage of every model call of the run so far.
func (r *Runner) totalUsage() llm.Usage {
	r.usageMu.Lock()
	defer r.usageMu.Unlock()
	return r.usage
}

// noteToolError records the error of a tool call for the step record. Tool
// calls of one reply run concurrently.
func (r *Runner) noteToolError(callID string, err error) {
	r.toolErrMu.Lock()
	defer r.toolErrMu.Unlock()
	if r.toolErrs == nil {
		r.toolErrs = make(map[string]error)
	}
	r.toolErrs[callID] = err
}

// takeToolErrors returns the errors noted since the last call.
func (r *Runner) takeToolErrors() map[string]error {
	r.toolErrMu.Lock()
	defer r.toolErrMu.Unlock()
	errs := r.toolErrs
	r.toolErrs = nil
	return errs
}

// programmerError returns the *prompt.Error a tool's panic is when it is a
// programmer's mistake rather than the tool's failure: a hook called from
// the tool (a *prompt.MisuseError) or a state change made without the
// call's context (a *state.ContextError). The run fails with it, naming
// the site, instead of feeding the mistake to the model.
func programmerError(pe *ToolPanicError) error {
	err, _ := pe.Value.(error)
	if err == nil {
		return nil
	}
	if me, ok := errors.AsType[*prompt.MisuseError](err); ok {
		return &prompt.Error{Site: me.Site, Err: fmt.Errorf("tool %q: %w", pe.Tool, me)}
	}
	if ce, ok := errors.AsType[*state.ContextError](err); ok {
		return &prompt.Error{Site: pe.Site, Err: fmt.Errorf("tool %q: %w", pe.Tool, ce)}
	}
	return nil
}

// noteMisuse records the first programmer's mistake made by a tool of the
// step under way.
func (r *Runner) noteMisuse(err error) {
	r.toolErrMu.Lock()
	defer r.toolErrMu.Unlock()
	if r.misuse == nil {
		r.misuse = err
	}
}

// takeMisuse returns the mistake noted since the last call, with the
// step's number.
func (r *Runner) takeMisuse() error {
	r.toolErrMu.Lock()
	defer r.toolErrMu.Unlock()
	err := r.misuse
	r.misuse = nil
	if pe, ok := err.(*prompt.Error); ok {
		pe.Step = r.step
	}
	return err
}
