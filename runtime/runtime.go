// Package runtime drives a prompt function against a model: the step loop.
//
// Before every step the prompt function is executed again; definitions not
// declared again are removed; the effects that are due run; their changes
// are applied; the request is rendered and sent; the tools the model asks
// for are run (several at once when it asks for several) and their results
// appended in call order; the after-reply effects run. A reply without tool
// calls ends the run.
//
// The loop is offered at three grains: Runner.Next runs one step,
// Runner.Run runs to completion, Runner.All iterates over the steps.
//
// Package runtime has no network code: it consumes the Model interface,
// implemented by provider adapters and by the scripted model in package
// snapshots.
package runtime

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/internal/callsite"
	"github.com/reprompt/reprompt/prompt"
)

// DefaultMaxSteps is the step limit when Config.MaxSteps is zero.
const DefaultMaxSteps = 100

// Errors a run can end with. Test them with errors.Is.
var (
	// ErrMaxSteps: the model still asked for tools when the step limit was
	// reached.
	ErrMaxSteps = errors.New("step limit reached")
	// ErrDone: Next was called on a run that already ended.
	ErrDone = errors.New("run already ended")
)

// Config configures a run. The zero Config is valid: at most
// DefaultMaxSteps steps, no other stop condition.
type Config struct {
	// MaxSteps is the most steps (model calls) a run makes. Zero means
	// DefaultMaxSteps; a negative value means no limit. Reaching it while
	// the model still calls tools ends the run with an error wrapping
	// ErrMaxSteps. No other stop condition overrides it, and it overrides
	// none.
	MaxSteps int
	// StopWhen, if set, is called after every step; returning true ends the
	// run normally.
	StopWhen func(last *Step) bool
	// StopTools names tools that end the run once one of them ran without
	// error; the model is not called again.
	StopTools []string
	// OnDelta, if set and the model is a StreamingModel, receives the reply
	// as it streams.
	OnDelta func(Delta)
	// AgentMaxSteps is the step limit of sub-agents. Zero means MaxSteps.
	AgentMaxSteps int
}

// Step records what happened at one step. It is the unit of the iterator,
// of snapshots and of logs.
type Step struct {
	Number int
	// Request is what was sent. Its Messages share memory with the
	// transcript: read-only.
	Request *Request
	Reply   *Reply
	// ToolResults are the results of the reply's tool calls, in call order.
	ToolResults []defs.ToolResult
	// State is a shallow copy of the state after the step.
	State map[string]any
	// Effects are the effects that ran, both phases, and why.
	Effects []effects.Ran
	// Disabled and Reminded are the definitions disabled and reminded for
	// this step's request.
	Disabled []defs.Ref
	Reminded []defs.Ref
	// Committed reports that an effect rewrote the transcript at this step.
	Committed bool
	// Done reports that the run ended with this step.
	Done bool
}

// Result is the outcome of a completed run.
type Result struct {
	// Text is the content of the last reply.
	Text string
	// Steps are the records of every step.
	Steps []*Step
	// Transcript is the final transcript (read-only).
	Transcript []defs.Message
	// Usage sums the usage of every model call.
	Usage Usage
}

// StepError is a step that failed outside the prompt function and the
// effects (which report *prompt.Error and *effects.Error): the model call,
// or a request that failed validation and was not sent.
type StepError struct {
	Step int
	Op   string // "model", "render" or "validate"
	Err  error
}

func (e *StepError) Error() string {
	return fmt.Sprintf("step %d: %s: %v", e.Step, e.Op, e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }

// Runner runs one prompt function against one model. It is not safe for
// concurrent use.
type Runner struct {
	model      Model
	fn         prompt.Func
	cfg        Config
	p          *prompt.Prompt
	transcript []defs.Message
	step       int
	done       bool
	err        error
	lastTool   *defs.ToolResult
	usage      Usage
	closed     bool
	yaml       yamlCache
}

// New returns a runner for fn against model.
func New(model Model, fn prompt.Func, cfg Config) *Runner {
	return &Runner{model: model, fn: fn, cfg: cfg, p: prompt.New("")}
}

// Run runs fn against model to completion; see Runner.Run.
func Run(ctx context.Context, model Model, fn prompt.Func, cfg Config) (*Result, error) {
	return New(model, fn, cfg).Run(ctx)
}

// Prompt returns the prompt the runner executes, for reading state and
// definitions between steps.
func (r *Runner) Prompt() *prompt.Prompt { return r.p }

// Transcript returns the transcript so far (read-only).
func (r *Runner) Transcript() []defs.Message { return slices.Clip(r.transcript) }

// StepNumber returns the number of the next step.
func (r *Runner) StepNumber() int { return r.step }

// Run runs steps until the run ends and returns every step's record. On
// error the result holds the steps completed so far.
func (r *Runner) Run(ctx context.Context) (*Result, error) {
	res := &Result{}
	var err error
	for s, serr := range r.All(ctx) {
		if s != nil {
			res.Steps = append(res.Steps, s)
		}
		if serr != nil {
			err = serr
		}
	}
	res.Transcript = r.Transcript()
	res.Usage = r.usage
	if n := len(res.Steps); n > 0 && res.Steps[n-1].Reply != nil {
		res.Text = res.Steps[n-1].Reply.Message.Content
	}
	return res, err
}

// All returns an iterator over the steps of the run, ending after the last
// one. A failing step is yielded with its error (and the record of what it
// did, if any) and ends the iteration.
func (r *Runner) All(ctx context.Context) iter.Seq2[*Step, error] {
	return func(yield func(*Step, error) bool) {
		for !r.done && r.err == nil {
			s, err := r.Next(ctx)
			if !yield(s, err) || err != nil {
				return
			}
		}
	}
}

// Next runs one step and returns its record. After the last step it
// returns ErrDone; after a failure it returns the same error again.
func (r *Runner) Next(ctx context.Context) (*Step, error) {
	if r.err != nil {
		return nil, r.err
	}
	if r.done {
		return nil, ErrDone
	}
	s, err := r.next(ctx)
	if err != nil {
		r.err = err
		r.close()
	} else if s.Done {
		r.done = true
		r.close()
	}
	return s, err
}

func (r *Runner) close() {
	if !r.closed {
		r.closed = true
		r.p.Effects().Close()
	}
}

func (r *Runner) maxSteps() int {
	if r.cfg.MaxSteps == 0 {
		return DefaultMaxSteps
	}
	return r.cfg.MaxSteps
}

func (r *Runner) next(ctx context.Context) (*Step, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n := r.step
	rec := &Step{Number: n}
	reg := r.p.Registry()
	reg.BeginStep()

	// 1–2. Execute the prompt function; reconcile definitions.
	added, err := r.p.Execute(n, r.fn)
	if err != nil {
		return rec, err
	}
	r.transcript = append(r.transcript, added...)

	// 3. Effects before the call.
	es := r.effectStep(n)
	ran, err := r.p.Effects().Run(ctx, effects.BeforeCall, es)
	rec.Effects = ran
	if err != nil {
		return rec, err
	}

	// 4–5. Apply changes, render, validate, send.
	mods := es.Mods()
	if mods.Committed {
		r.transcript = slices.Clip(mods.Transcript)
		rec.Committed = true
	}
	req, err := r.render(n, mods)
	if err != nil {
		return rec, err
	}
	rec.Request = req
	rec.Disabled = reg.DisabledRefs()
	rec.Reminded = reg.Reminded()
	if mods.Committed || mods.Viewed {
		if err := ValidateMessages(req.Messages); err != nil {
			return rec, &StepError{Step: n, Op: "validate", Err: err}
		}
	}
	reply, err := r.call(ctx, req)
	if err != nil {
		return rec, &StepError{Step: n, Op: "model", Err: err}
	}
	reply.Message.Role = defs.RoleAssistant
	rec.Reply = reply
	r.usage.InputTokens += reply.Usage.InputTokens
	r.usage.OutputTokens += reply.Usage.OutputTokens
	r.usage.CachedTokens += reply.Usage.CachedTokens
	r.usage.ReasoningTokens += reply.Usage.ReasoningTokens
	r.transcript = append(r.transcript, reply.Message)

	// 6. Tools, concurrently, results in call order.
	calls := reply.Message.ToolCalls
	stopTool := false
	if len(calls) > 0 {
		rec.ToolResults = r.runTools(ctx, calls, req.Tools)
		for i := range rec.ToolResults {
			res := &rec.ToolResults[i]
			r.transcript = append(r.transcript, res.Message())
			if !res.IsError && slices.Contains(r.cfg.StopTools, res.Name) {
				stopTool = true
			}
		}
		r.lastTool = &rec.ToolResults[len(rec.ToolResults)-1]
	}

	// After-reply effects.
	es = r.effectStep(n)
	es.Reply = &reply.Message
	es.Results = rec.ToolResults
	ran, err = r.p.Effects().Run(ctx, effects.AfterReply, es)
	rec.Effects = append(rec.Effects, ran...)
	if err != nil {
		return rec, err
	}
	if mods := es.Mods(); mods.Committed {
		if err := ValidateMessages(mods.Transcript); err != nil {
			return rec, &StepError{Step: n, Op: "validate", Err: err}
		}
		r.transcript = slices.Clip(mods.Transcript)
		rec.Committed = true
	}

	rec.State = r.p.Store().Snapshot()
	r.step++
	switch {
	case len(calls) == 0, stopTool:
		rec.Done = true
	case r.cfg.StopWhen != nil && r.cfg.StopWhen(rec):
		rec.Done = true
	case r.maxSteps() > 0 && r.step >= r.maxSteps():
		rec.Done = true
		return rec, fmt.Errorf("%w: %d steps, and the model still called tools", ErrMaxSteps, r.maxSteps())
	}
	return rec, nil
}

func (r *Runner) effectStep(n int) *effects.Step {
	reg := r.p.Registry()
	es := effects.NewStep(n, slices.Clip(r.transcript))
	es.Tools = reg.Collection(defs.KindTool)
	es.Systems = reg.Collection(defs.KindSystem)
	es.Variables = reg.Collection(defs.KindVariable)
	es.LastTool = r.lastTool
	return es
}

func (r *Runner) render(n int, mods *effects.Mods) (*Request, error) {
	reg := r.p.Registry()
	sys, err := renderSystem(reg, mods, &r.yaml)
	if err != nil {
		return nil, &StepError{Step: n, Op: "render", Err: err}
	}
	msgs := slices.Clip(r.transcript)
	if mods.Viewed {
		msgs = slices.Clip(mods.Messages)
	}
	if refs := reg.Reminded(); len(refs) > 0 {
		msgs = append(msgs, reminderMessage(refs)) // msgs is clipped: this copies
	}
	return &Request{System: sys, Messages: msgs, Tools: renderTools(reg, mods)}, nil
}

func (r *Runner) call(ctx context.Context, req *Request) (*Reply, error) {
	var reply *Reply
	var err error
	if sm, ok := r.model.(StreamingModel); ok && r.cfg.OnDelta != nil {
		reply, err = sm.Stream(ctx, req, r.cfg.OnDelta)
	} else {
		reply, err = r.model.Generate(ctx, req)
	}
	if err == nil && reply == nil {
		err = errors.New("model returned no reply and no error")
	}
	return reply, err
}

// runTools runs the calls, concurrently when there are several, and returns
// their results in call order. Only the tools offered in this step's request
// are run.
func (r *Runner) runTools(ctx context.Context, calls []defs.ToolCall, offered []ToolSpec) []defs.ToolResult {
	ctx = prompt.WithAgentRunner(ctx, r)
	results := make([]defs.ToolResult, len(calls))
	if len(calls) == 1 {
		results[0] = r.runTool(ctx, calls[0], offered)
		return results
	}
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Go(func() { results[i] = r.runTool(ctx, c, offered) })
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
		return fail("unknown tool %q; the tools available are: %v", c.Name, names)
	}
	if !slices.ContainsFunc(offered, func(t ToolSpec) bool { return t.Name == c.Name }) {
		return fail("tool %q is disabled at this step and was not run", c.Name)
	}
	if def.Tool.Validate != nil {
		if err := def.Tool.Validate(c.Arguments); err != nil {
			return fail("%v", err)
		}
	}
	out, err := callTool(ctx, def.Tool, c.Arguments)
	if err != nil {
		return fail("%v", err)
	}
	res.Content = out
	return res
}

// ToolPanicError is a tool that panicked. The model receives it as an error
// result.
type ToolPanicError struct {
	Tool  string
	Site  string
	Value any
}

func (e *ToolPanicError) Error() string {
	return fmt.Sprintf("tool %q panicked at %s: %v", e.Tool, e.Site, e.Value)
}

func callTool(ctx context.Context, t *defs.Tool, args []byte) (out string, err error) {
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
	if cfg.AgentMaxSteps != 0 {
		cfg.MaxSteps = cfg.AgentMaxSteps
	}
	sub := &Runner{model: r.model, fn: fn, cfg: cfg, p: prompt.New(task)}
	sub.transcript = []defs.Message{defs.UserMessage(task)}
	sub.p.MarkMessagesSeen([]string{prompt.MessageID(defs.RoleUser, task)})
	res, err := sub.Run(ctx)
	if err != nil {
		return "", fmt.Errorf("sub-agent %q: %w", name, err)
	}
	return res.Text, nil
}
