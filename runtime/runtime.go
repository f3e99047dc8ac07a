// Package runtime drives a prompt function against a model: the step loop.
//
// Before every step the prompt function is executed again; definitions not
// declared again are removed; the effects that are due run; their changes
// are applied; the request is rendered, checked and sent; the tools the
// model asks for are run (several at once when it asks for several) and
// their results appended in call order; the after-reply effects run. A
// reply without tool calls ends the run.
//
// The loop is offered at three grains: Runner.Next runs one step,
// Runner.Run runs to completion, Runner.All iterates over the steps.
//
// Package runtime has no network code: it consumes the Model interface,
// implemented by provider adapters and by the scripted model in package
// snapshots.
//
// # Tracing
//
// With Config.TracerProvider set, a run makes OpenTelemetry spans named and
// attributed by the GenAI semantic conventions:
//
//	invoke_agent {Config.Name}        the run, from the first step to the last
//	  reprompt.step                   one per step
//	    chat {model}                  one per model call (each retry too);
//	                                  reprompt.summary=true for an effect's
//	                                  completion (Step.Model, summaries)
//	    execute_tool {tool}           one per tool call
//	      invoke_agent {agent}        a sub-agent, under the call that ran it
//
// Model calls carry gen_ai.operation.name, gen_ai.provider.name and
// gen_ai.request.model (from a Model that implements ProviderNamer and
// ModelNamer), gen_ai.usage.input_tokens, gen_ai.usage.output_tokens,
// gen_ai.usage.cache_read.input_tokens, gen_ai.response.finish_reasons and
// gen_ai.response.id; tool calls gen_ai.tool.name and gen_ai.tool.call.id;
// the run gen_ai.agent.name, gen_ai.conversation.id (Config.SessionID) and
// the run's usage. Attributes of reprompt's own are under "reprompt.": a
// step span has reprompt.step, reprompt.input_tokens (the runtime's count),
// reprompt.prefix_tokens (shared with the previous request: cacheable),
// reprompt.billed_input, reprompt.disabled, reprompt.reminded,
// reprompt.committed, reprompt.compactions and reprompt.recovered, and an
// event per effect that ran (reprompt.effect, with its id, site, phase and
// reason), per transcript rewrite (reprompt.commit, or reprompt.compaction
// when the transcript got shorter in tokens) and per retry
// (reprompt.retry). An error sets the status of its spans to Error,
// records the error as an exception event and names its type in
// error.type. Message content (system instructions, messages, tool
// arguments and results, dependency values in effect reasons) is recorded
// only with Config.TraceContent. The run's span ends when the run does: a
// runner abandoned before its last step leaves it open.
//
// # Logging
//
// With Config.Logger set, a run logs one Info record per step ("step":
// step, input_tokens, prefix_tokens, billed_input, usage, tool_calls,
// effects that ran and why, disabled, reminded, duration) and one when it
// ends ("run ended": totals); a Warn record per model call retried, per
// compaction ("transcript compacted", with messages and tokens before and
// after) and per request recovered after the provider found it too long;
// an Error record per failed step, with error_type; a Debug record per
// other rewrite of the transcript. A sub-agent's records
// carry its name as agent.
package runtime

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/internal/callsite"
	"github.com/reprompt/reprompt/internal/promptrt"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/state"
)

// Errors a run can end with. Test them with errors.Is.
var (
	// ErrMaxSteps: the model still asked for tools when the step limit was
	// reached.
	ErrMaxSteps = errors.New("step limit reached")
	// ErrDone: Next was called on a run that already ended.
	ErrDone = errors.New("run already ended")
)

// Step records what happened at one step. It is the unit of the iterator,
// of snapshots and of logs.
type Step struct {
	Number int
	// Request is what was sent. Its Messages share memory with the
	// transcript: read-only. It is nil for a step interrupted by a crash
	// after the model's reply and completed by Resume (Resumed is set).
	Request *Request
	Reply   *Reply
	// ToolResults are the results of the reply's tool calls, in call order.
	ToolResults []defs.ToolResult
	// Agents are the sub-agents the reply's tool calls ran, in call order,
	// each with the records of its steps.
	Agents []*AgentRun
	// ToolErrors are the Go errors behind the error results of tools that
	// failed when they ran (returned an error, panicked, timed out), by
	// call id, for the developer: a *ToolPanicError keeps the source
	// location of the panic, which the model's text leaves out. Arguments
	// that failed validation, unknown and disabled tools have no entry. nil
	// when no tool failed.
	ToolErrors map[string]error
	// State is a shallow copy of the state after the step. Steps after
	// which the state did not change share one map: read-only.
	State map[string]any
	// Effects are the effects that ran, both phases, and why.
	Effects []effects.Ran
	// Summaries are the completions the effects asked for at this step
	// through effects.Step.Model (compaction's summaries), in order.
	Summaries []*Summary
	// Disabled and Reminded are the definitions disabled and reminded for
	// this step's request.
	Disabled []defs.Ref
	Reminded []defs.Ref
	// Committed reports that an effect rewrote the transcript at this step.
	Committed bool
	// Recovered reports that the provider rejected the request as too long
	// and it was sent again after the Recovery effects compacted it.
	Recovered bool
	// InputTokens is the runtime's count of the request's tokens (system
	// prompt, tool schemas, messages).
	InputTokens int
	// PrefixTokens is how many of them the request shares as an exact
	// prefix with the previous step's request: what a provider's prompt
	// cache can reuse.
	PrefixTokens int
	// BilledInput estimates the input tokens billed at full price: the
	// tokens not in the shared prefix, plus the shared ones at
	// Config.CachedInputFraction.
	BilledInput float64
	// Resumed reports a step that was interrupted by a crash after the
	// model's reply and completed by Resume; Interrupted lists the calls
	// that got an "interrupted" result instead of running.
	Resumed     bool
	Interrupted []string
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
	// Stats are the run's totals.
	Stats effects.RunStats

	store *state.Store // the prompt's state, read by StateOf
}

// StateOf returns the value of a state key as the run left it, typed as
// the prompt function declared it:
//
//	res, err := runtime.Run(ctx, model, agent, cfg)
//	count, err := runtime.StateOf[int](res, "count")
//
// The error is a *state.TypeError when the key holds another type and a
// *state.NotFoundError when it is not set (or res is nil or was not made by
// a run). It is a function, not a method, because Go methods cannot take
// type parameters.
func StateOf[T any](res *Result, key string) (T, error) {
	if res == nil || res.store == nil {
		var zero T
		return zero, &state.NotFoundError{Key: key}
	}
	return state.Get[T](res.store, key)
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
	closed     bool
	lastTool   *defs.ToolResult
	usage      Usage
	stats      effects.RunStats
	started    time.Time
	elapsed0   time.Duration // elapsed time restored from a checkpoint
	renderer   renderer
	ledger     *ledger
	valid      validator
	// Made once, as method values and interface conversions allocate.
	count     func([]defs.Message) int
	prefix    func(int) int
	completer effects.Completer
	// Sessions (see session.go).
	seq        int64
	generation int            // incremented by every rewrite of the transcript
	savedGen   int            // generation of the last checkpoint saved
	saved      []defs.Message // transcript of the last checkpoint saved
	pending    *session.Pending
	offered    []string            // tools offered by the request of the step under way
	callIDs    map[string]struct{} // tool call ids used so far (see uniqueCallIDs)
	saveMu     sync.Mutex
	usageMu    sync.Mutex // guards usage and stats
	obs        *observer  // tracing and logging (see observe.go); nil without them
	// Records for the step under way (see record.go).
	agent     string // the sub-agent this runner runs; "" for a top run
	recMu     sync.Mutex
	agentRuns []*AgentRun
	summaries []*Summary
	toolErrMu sync.Mutex // guards toolErrs
	toolErrs  map[string]error
	recorder  stepRecorder // the session record of the step under way (see steprecord.go)

	// The steps effects see, one per phase, reused from step to step: a
	// Step is valid only during the call of the effect it is passed to.
	before, after effects.Step
	// The last state snapshot of a step record, and the store's version
	// it was taken at.
	state        map[string]any
	stateVersion uint64
	// appended reports that the transcript's array was made by grow, not
	// by a commit.
	appended bool
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

// New returns a runner for fn against model.
func New(model Model, fn prompt.Func, cfg Config) *Runner {
	r := &Runner{model: model, fn: fn, cfg: cfg, p: prompt.New(""), ledger: newLedger(cfg.Counter)}
	r.count, r.prefix, r.completer = r.ledger.count, r.ledger.prefix, completer{r}
	return r
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

// Stats returns the run's totals so far.
func (r *Runner) Stats() effects.RunStats {
	r.usageMu.Lock()
	s := r.stats
	r.usageMu.Unlock()
	s.Elapsed = r.elapsed()
	return s
}

// Run runs steps until the run ends and returns every step's record. On
// error the result holds the steps completed so far. It closes the runner
// (see Close) before it returns.
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
	if cerr := r.Close(); cerr != nil && err == nil {
		err = cerr
	}
	res.Transcript = r.Transcript()
	res.store = r.p.Store()
	r.usageMu.Lock()
	res.Usage = r.usage
	r.usageMu.Unlock()
	res.Stats = r.Stats()
	if n := len(res.Steps); n > 0 && res.Steps[n-1].Reply != nil {
		res.Text = res.Steps[n-1].Reply.Message.Content
	}
	return res, err
}

// All returns an iterator over the steps of the run, ending after the last
// one. A failing step is yielded with its error (and the record of what it
// did, if any) and ends the iteration. Breaking out of the loop leaves the
// run open, so that Next may continue it: defer Close to run the effects'
// pending cleanups.
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
// returns ErrDone; after a failure it returns the same error again. When
// the run ends or fails, Next closes the runner (see Close); a cleanup that
// panics then is the step's error.
func (r *Runner) Next(ctx context.Context) (*Step, error) {
	if r.err != nil {
		return nil, r.err
	}
	if r.done {
		return nil, ErrDone
	}
	if r.started.IsZero() {
		r.started = time.Now()
	}
	ctx = r.observeStep(ctx)
	r.recorder.begin(r)
	s, err := r.step1(ctx)
	r.observeStepEnd(ctx, s, err)
	if err != nil {
		if cerr := r.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
		r.err = err
	} else if s.Done {
		r.done = true
		if cerr := r.Close(); cerr != nil {
			err, r.err = cerr, cerr
		}
	}
	return s, err
}

// step1 runs one step, turning a panic that escaped it (from a callback
// such as Config.StopWhen or Config.OnDelta; tools, effects and the prompt
// function have their own recovery) into a *PanicError.
func (r *Runner) step1(ctx context.Context) (s *Step, err error) {
	n := r.step
	defer func() {
		if v := recover(); v != nil {
			s, err = nil, &PanicError{Step: n, Site: callsite.Panic().String(), Value: v}
		}
	}()
	defer func() { r.attachSummaries(s) }()
	if r.pending != nil {
		return r.resumePending(ctx)
	}
	return r.next(ctx)
}

// PanicError is a panic in a callback of the run (Config.StopWhen,
// Config.OnDelta, a model), recovered at the step boundary.
type PanicError struct {
	Step  int
	Site  string
	Value any
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("step %d: panic at %s: %v", e.Step, e.Site, e.Value)
}

// Close ends the run: it runs the cleanups the effects registered
// (effects.Step.Cleanup) that are still pending, in the order the effects
// were registered, and returns the *effects.Error of each effect whose
// cleanup panicked, joined. Next calls it when the run ends or fails, and Run
// always does; a caller that may stop before the end (breaking out of All,
// or calling Next until it has seen enough) should defer it:
//
//	r := runtime.New(model, agent, cfg)
//	defer r.Close()
//	for step, err := range r.All(ctx) { ... }
//
// Close is safe to call more than once: later calls do nothing and return
// nil. After Close, Next returns ErrDone.
func (r *Runner) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	r.done = true
	return promptrt.Effects(r.p).Close()
}

func (r *Runner) elapsed() time.Duration {
	if r.started.IsZero() {
		return r.elapsed0
	}
	return r.elapsed0 + time.Since(r.started)
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
	reg := promptrt.Registry(r.p)
	reg.BeginStep()

	// 1–2. Execute the prompt function; reconcile definitions.
	added, err := promptrt.Execute(r.p, n, r.fn)
	if err != nil {
		return rec, err
	}
	r.grow(len(added))
	r.transcript = append(r.transcript, added...)

	// 3. Effects before the call.
	es := r.effectStep(n, &r.before)
	ran, err := promptrt.Effects(r.p).Run(ctx, effects.BeforeCall, es)
	rec.Effects = ran
	if err != nil {
		return rec, err
	}

	// 4–5. Apply changes, render, check, send.
	req, err := r.prepare(n, rec, es.Mods())
	if err != nil {
		return rec, err
	}
	reply, err := r.call(ctx, req)
	if err != nil && contextTooLong(err) {
		req, reply, err = r.recover(ctx, n, rec, es, err)
	}
	if err != nil {
		return rec, &StepError{Step: n, Op: "model", Err: err}
	}
	reply.Message.Role = defs.RoleAssistant
	r.uniqueCallIDs(&reply.Message, n)
	rec.Reply = reply
	r.account(reply.Usage)
	r.ledger.observe(rec.InputTokens, reply.Usage.InputTokens)
	r.usageMu.Lock()
	r.stats.Steps++
	r.usageMu.Unlock()
	if r.offered == nil {
		r.offered = []string{} // non-nil: "none offered" is not "unknown"
	}
	r.offered = r.offered[:0]
	for _, t := range req.Tools {
		r.offered = append(r.offered, t.Name)
	}
	if err := r.savePending(ctx, reply.Message, nil); err != nil {
		return rec, &StepError{Step: n, Op: "checkpoint", Err: err}
	}
	return r.complete(ctx, rec, req.Tools, nil)
}

// complete finishes a step whose reply is in rec: it runs the tool calls
// (those without a result in given), appends the reply and the results to
// the transcript, runs the after-reply effects, saves a checkpoint and
// decides whether the run goes on.
func (r *Runner) complete(ctx context.Context, rec *Step, offered []ToolSpec, given map[string]defs.ToolResult) (*Step, error) {
	n := rec.Number
	reply := rec.Reply

	// 6. Tools, concurrently, results in call order. The reply joins the
	// transcript once they are done: until then checkpoints hold it as
	// pending.
	calls := reply.Message.ToolCalls
	stopTool := false
	if len(calls) > 0 {
		var err error
		rec.ToolResults, err = r.runCalls(ctx, reply.Message, offered, given)
		rec.Agents = r.takeAgentRuns(calls)
		rec.ToolErrors = r.takeToolErrors()
		if err != nil {
			return rec, err
		}
	}
	r.grow(1 + len(rec.ToolResults))
	r.transcript = append(r.transcript, reply.Message)
	if len(calls) > 0 {
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
	es := r.effectStep(n, &r.after)
	es.Reply = &reply.Message
	es.Results = rec.ToolResults
	ran, err := promptrt.Effects(r.p).Run(ctx, effects.AfterReply, es)
	rec.Effects = append(rec.Effects, ran...)
	if err != nil {
		return rec, err
	}
	if mods := es.Mods(); mods.Committed {
		if err := r.commit(mods.Transcript); err != nil {
			return rec, &StepError{Step: n, Op: "validate", Err: err}
		}
		rec.Committed = true
	}

	rec.State = r.stateSnapshot()
	r.step++
	var stepErr error
	switch {
	case len(calls) == 0, stopTool:
		rec.Done = true
	case r.cfg.StopWhen != nil && r.cfg.StopWhen(rec):
		rec.Done = true
	case r.maxSteps() > 0 && r.step >= r.maxSteps():
		rec.Done = true
		stepErr = fmt.Errorf("%w: %d steps, and the model still called tools", ErrMaxSteps, r.maxSteps())
	}
	r.recorder.end(rec)
	if err := r.save(ctx, rec.Done, nil); err != nil {
		return rec, &StepError{Step: n, Op: "checkpoint", Err: err}
	}
	return rec, stepErr
}

// uniqueCallIDs gives every tool call of m an id used by no other call of
// the run, before the reply enters the transcript or a checkpoint: some
// servers send calls without ids, repeat an id within one reply, or reuse
// "call_0" on every turn, and a conversation with such ids would fail
// validation at the next step, and at every Resume. A missing id becomes
// "call_<step>_<index>"; a repeated one gets a suffix "_2", "_3"… The
// calls are copied before they are changed: the model's reply may be
// shared.
func (r *Runner) uniqueCallIDs(m *defs.Message, step int) {
	if len(m.ToolCalls) == 0 {
		return
	}
	if r.callIDs == nil {
		r.callIDs = make(map[string]struct{})
		for _, msg := range r.transcript {
			for _, c := range msg.ToolCalls {
				r.callIDs[c.ID] = struct{}{}
			}
		}
	}
	copied := false
	for i, c := range m.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", step, i)
		}
		for k := 2; ; k++ {
			if _, taken := r.callIDs[id]; !taken {
				break
			}
			id = fmt.Sprintf("%s_%d", cmp.Or(c.ID, fmt.Sprintf("call_%d_%d", step, i)), k)
		}
		r.callIDs[id] = struct{}{}
		if id != c.ID {
			if !copied {
				m.ToolCalls, copied = slices.Clone(m.ToolCalls), true
			}
			m.ToolCalls[i].ID = id
		}
	}
}

// stateSnapshot returns a shallow copy of the state for a step record:
// the previous step's when the store did not change since.
func (r *Runner) stateSnapshot() map[string]any {
	store := r.p.Store()
	v := store.Version() // before the copy: a change after it makes the next step copy again
	if r.state == nil || v != r.stateVersion {
		r.state, r.stateVersion = store.Snapshot(), v
	}
	return r.state
}

// grow makes room for n more transcript messages. An array that grew by
// appending grows by doubling: step records keep the arrays their requests
// were made from, and append's growth by a quarter for long slices would
// leave about four times the final transcript behind in them, doubling
// about once. The first growth after a commit (a transcript rewritten by
// an effect, often at every step) grows as append does: doubling there
// would only make every step's array larger.
func (r *Runner) grow(n int) {
	if len(r.transcript)+n <= cap(r.transcript) {
		return
	}
	if r.appended {
		n = max(n, len(r.transcript))
	}
	r.transcript = slices.Grow(r.transcript, n)
	r.appended = true
}

// sameSlice reports whether a and b are the same slice of the same array.
func sameSlice(a, b []defs.Message) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// commit replaces the transcript with msgs after checking it.
func (r *Runner) commit(msgs []defs.Message) error {
	if err := ValidateMessages(msgs); err != nil {
		return err
	}
	r.observeCommit(msgs)
	r.recorder.commit(len(r.transcript), len(msgs))
	r.transcript = slices.Clip(msgs)
	r.appended = false
	r.valid.reset()
	r.generation++
	return nil
}

// prepare applies the effects' changes and renders and checks the request.
func (r *Runner) prepare(n int, rec *Step, mods *effects.Mods) (*Request, error) {
	if mods.Committed && !sameSlice(mods.Transcript, r.transcript) {
		if err := r.commit(mods.Transcript); err != nil {
			return nil, &StepError{Step: n, Op: "validate", Err: err}
		}
		rec.Committed = true
	}
	req, verbatim, err := r.render(n, mods)
	if err != nil {
		return nil, err
	}
	rec.Request = req
	reg := promptrt.Registry(r.p)
	rec.Disabled = reg.DisabledRefs()
	rec.Reminded = reg.Reminded()
	if err := r.valid.check(r.transcript, req.Messages, verbatim); err != nil {
		return nil, &StepError{Step: n, Op: "validate", Err: err}
	}
	r.ledger.sync(r.transcript)
	rec.InputTokens, rec.PrefixTokens = r.ledger.requestTokens(req, verbatim)
	frac := r.cfg.CachedInputFraction
	if frac == 0 {
		frac = DefaultCachedInputFraction
	}
	rec.BilledInput = float64(rec.InputTokens-rec.PrefixTokens) + frac*float64(rec.PrefixTokens)
	return req, nil
}

// contextTooLong reports whether err is a *ModelError rejecting the
// request as too long. (Its own function, so that the target of errors.As
// is allocated only for a failed call.)
func contextTooLong(err error) bool {
	var me *ModelError
	return errors.As(err, &me) && me.ContextTooLong
}

// recover handles a request rejected as too long: the Recovery effects run
// once, and the request is rendered and sent again.
// The Recovery effects run on the step the BeforeCall effects prepared, so
// the changes those made (limits, variables, appended messages) hold for
// the request sent again.
func (r *Runner) recover(ctx context.Context, n int, rec *Step, es *effects.Step, cause error) (*Request, *Reply, error) {
	ran, ok, err := promptrt.Effects(r.p).RunRecovery(ctx, es)
	rec.Effects = append(rec.Effects, ran...)
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return nil, nil, cause
	}
	req, err := r.prepare(n, rec, es.Mods())
	if err != nil {
		return nil, nil, err
	}
	rec.Recovered = true
	reply, err := r.call(ctx, req)
	return req, reply, err
}

// account adds u to the run's usage and cost. Sub-agents running in
// parallel tool calls account into their parent concurrently.
func (r *Runner) account(u Usage) {
	r.usageMu.Lock()
	defer r.usageMu.Unlock()
	r.usage.InputTokens += u.InputTokens
	r.usage.OutputTokens += u.OutputTokens
	r.usage.CachedTokens += u.CachedTokens
	r.usage.ReasoningTokens += u.ReasoningTokens
	r.stats.InputTokens += u.InputTokens
	r.stats.OutputTokens += u.OutputTokens
	r.stats.CachedTokens += u.CachedTokens
	p := r.cfg.Pricing
	cached := min(u.CachedTokens, u.InputTokens)
	r.stats.Cost += (float64(u.InputTokens-cached)*p.Input + float64(cached)*p.CachedInput + float64(u.OutputTokens)*p.Output) / 1e6
}

// effectStep makes es the step effects see at step n and returns it.
func (r *Runner) effectStep(n int, es *effects.Step) *effects.Step {
	reg := promptrt.Registry(r.p)
	*es = *effects.NewStep(n, slices.Clip(r.transcript))
	es.Tools = reg.Collection(defs.KindTool)
	es.Systems = reg.Collection(defs.KindSystem)
	es.Variables = reg.Collection(defs.KindVariable)
	es.LastTool = r.lastTool
	r.ledger.sync(r.transcript)
	if r.ledger.prev == nil {
		// No request yet: count the system prompt and tools as declared,
		// before any effect changed them.
		var none effects.Mods
		if sys, err := r.renderer.system(reg, &none); err == nil {
			r.ledger.fixed(sys, r.renderer.tools(reg, &none))
		}
	}
	es.Budget = effects.Budget{
		Window:  r.cfg.Window,
		Reserve: r.cfg.Reserve,
		Fixed:   r.ledger.scale(r.ledger.sysN + r.ledger.toolN),
		Count:   r.count,
		Prefix:  r.prefix,
	}
	es.Model = r.completer
	es.Stats = r.Stats()
	return es
}

func (r *Runner) render(n int, mods *effects.Mods) (req *Request, verbatim int, err error) {
	reg := promptrt.Registry(r.p)
	sys, err := r.renderer.system(reg, mods)
	if err != nil {
		return nil, 0, &StepError{Step: n, Op: "render", Err: err}
	}
	msgs := slices.Clip(r.transcript)
	verbatim = len(msgs)
	if mods.Viewed {
		msgs, verbatim = slices.Clip(mods.Messages), mods.Verbatim
	}
	if refs := reg.Reminded(); len(refs) > 0 {
		msgs = append(msgs, reminderMessage(refs)) // msgs is clipped: this copies
	}
	return &Request{System: sys, Messages: msgs, Tools: r.renderer.tools(reg, mods), Agent: r.agent, Step: n}, verbatim, nil
}

func (r *Runner) call(ctx context.Context, req *Request) (*Reply, error) {
	return r.callModel(ctx, r.model, req)
}

func (r *Runner) callModel(ctx context.Context, m Model, req *Request) (*Reply, error) {
	backoff := r.cfg.RetryBackoff
	if backoff <= 0 {
		backoff = time.Second
	}
	for attempt := 0; ; attempt++ {
		reply, err := r.callOnce(ctx, m, req)
		if err == nil || attempt >= r.cfg.Retries || !IsRetryable(err) {
			return reply, err
		}
		d := backoff << attempt
		d = d/2 + rand.N(d/2+1) // jitter: between half and the full backoff
		r.observeRetry(ctx, attempt, err, d)
		select {
		case <-ctx.Done():
			return nil, errors.Join(err, ctx.Err())
		case <-time.After(d):
		}
	}
}

func (r *Runner) callOnce(ctx context.Context, m Model, req *Request) (*Reply, error) {
	ctx, span := r.observeCall(ctx, req)
	if r.cfg.ModelTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.cfg.ModelTimeout)
		defer cancel()
	}
	var reply *Reply
	var err error
	if sm, ok := m.(StreamingModel); ok && r.cfg.OnDelta != nil && req.Purpose == PurposeStep {
		reply, err = sm.Stream(ctx, req, r.cfg.OnDelta)
	} else {
		reply, err = m.Generate(ctx, req)
	}
	if err == nil && reply == nil {
		err = errors.New("model returned no reply and no error")
	}
	r.observeCallEnd(span, reply, err)
	return reply, err
}

// completer lets effects ask Config.Summarizer (or the run's model) for a
// completion outside the transcript (summaries). Its usage counts in the
// run's stats; each request is recorded in the step's Summaries.
type completer struct{ r *Runner }

func (c completer) Complete(ctx context.Context, system, user string) (string, error) {
	req := &Request{System: system, Messages: []defs.Message{defs.UserMessage(user)}, Agent: c.r.agent, Step: c.r.step, Purpose: PurposeSummary}
	m := c.r.cfg.Summarizer
	if m == nil {
		m = c.r.model
	}
	ctx = c.r.observeSummary(ctx)
	reply, err := c.r.callModel(ctx, m, req)
	c.r.recordSummary(req, reply, err)
	if err != nil {
		return "", err
	}
	c.r.account(reply.Usage)
	return reply.Message.Content, nil
}
