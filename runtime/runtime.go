package runtime

import (
	"cmp"
	"context"
	"encoding/json"
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
	"github.com/reprompt/reprompt/internal/stepmods"
	"github.com/reprompt/reprompt/llm"
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
	Request *llm.Request
	Reply   *llm.Reply
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
	// Awaiting lists the calls of the reply that wait for a person's
	// decision (prompt.NeedsApproval): the step paused. ToolResults then
	// hold the results of the reply's other calls, which ran; the step is
	// not Done, and a later record of the same Number, with Decisions,
	// completes it once every call is decided (see Runner.Approve).
	Awaiting []PendingApproval
	// Decisions are, on the record that completes a paused step, the
	// decisions on its calls that needed approval, in call order. Its
	// ToolResults are the results of all the reply's calls.
	Decisions []Decision
	// Output is the typed answer accepted at this step (see
	// prompt.DefOutput and Output): the reply's text or the answer tool's
	// arguments. nil for every other step.
	Output json.RawMessage
	// Done reports that the run ended with this step: the conversation's
	// turn is over (a message sent continues it, see Runner.Continue).
	Done bool
	// Turn is the conversation's turn the step belongs to (see
	// prompt.Turn); Sent are the user messages that joined the transcript
	// at the start of this step: the turn's message, or messages sent while
	// the run went on (Runner.Send) or posted through the store (Post).
	Turn int
	Sent []defs.Message
}

// Result is the outcome of a completed run.
type Result struct {
	// Text is the content of the last reply, or the typed answer (JSON)
	// of a run that ended with one (see Output).
	Text string
	// Steps are the records of the steps this Run (or Continue) ran: in a
	// conversation, those of the turn; after Resume, those run since. The
	// store keeps the records of every step of a session
	// (session.Store's steps).
	Steps []*Step
	// Transcript is the final transcript (read-only).
	Transcript []defs.Message
	// Usage sums the usage of every model call.
	Usage llm.Usage
	// Stats are the run's totals.
	Stats effects.RunStats
	// Awaiting lists the tool calls the run paused for (see
	// prompt.NeedsApproval), nil if it did not pause. A paused run did not
	// end: decide each call with Runner.Approve or Runner.Deny and call
	// Runner.Run again (or, with a store, runtime.Resume in another
	// process) to continue it.
	Awaiting []PendingApproval

	store  *state.Store    // the prompt's state, read by StateOf
	answer json.RawMessage // the run's last typed answer, read by Output
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
	return state.Get[T](context.Background(), res.store, key)
}

// StepError is a step that failed outside the prompt function and the
// effects (which report *prompt.Error and *effects.Error): the model call,
// rendering the request, a request that failed validation and was not sent,
// saving a checkpoint, or a Config.ToolExecutor. Op says which, as one of
// the Op constants.
type StepError struct {
	Step int
	Op   string // OpModel, OpRender, OpValidate, OpCheckpoint or OpTools
	Err  error
}

// The values of StepError.Op: what part of the step failed.
const (
	// OpModel: the model call failed (after the retries Config.Retries
	// allows); Err is typically an *llm.ModelError.
	OpModel = "model"
	// OpRender: the request could not be rendered from the definitions
	// (a data definition that cannot be encoded, say).
	OpRender = "render"
	// OpValidate: the rendered request, or the model's reply, broke a rule
	// of the wire format and was not sent on (Err is an *llm.RequestError).
	OpValidate = "validate"
	// OpCheckpoint: saving the session's checkpoint to Config.Store failed;
	// the step's work is not durable.
	OpCheckpoint = "checkpoint"
	// OpTools: the Config.ToolExecutor failed: it returned an error, or
	// returned leaving a call without a result.
	OpTools = "tools"
)

func (e *StepError) Error() string {
	return fmt.Sprintf("step %d: %s: %v", e.Step, e.Op, e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }

// Runner runs one prompt function against one model. It is not safe for
// concurrent use.
type Runner struct {
	model      llm.Model
	fn         prompt.Func
	cfg        Config
	p          *prompt.Prompt
	transcript []defs.Message
	step       int
	done       bool
	err        error
	closed     bool
	lastTool   *defs.ToolResult
	usage      llm.Usage
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
	restored   bool                // pending comes from a checkpoint (Resume)
	approvals  []session.Approval  // the calls of the step under way that need approval (approval.go)
	offered    []string            // tools offered by the request of the step under way
	retired    map[string]struct{} // call ids of messages commits took out of the transcript (see uniqueCallIDs)
	batch      *callBatch          // kept for the next reply's calls (see newBatch)
	spareReq   *llm.Request        // where render puts the step's first request, allocated with its record
	saveMu     sync.Mutex
	usageMu    sync.Mutex // guards usage and stats
	obs        *observer  // tracing and logging (see observe.go); nil without them
	// The retired call ids as checkpoints keep them; nil until needed (see callids.go).
	retiredJSON json.RawMessage
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
	// out is the typed answer's bookkeeping (see output.go).
	out outputState
	// conv is the conversation's (see conversation.go).
	conv conversation
	// asking holds the questions of the step under way (see ask.go).
	asking asking
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
func New(model llm.Model, fn prompt.Func, cfg Config) *Runner {
	r := &Runner{model: model, fn: fn, cfg: cfg, p: prompt.New(""), ledger: newLedger(cfg.Counter)}
	r.count, r.prefix, r.completer = r.ledger.count, r.ledger.prefix, completer{r}
	return r
}

// Run runs fn against model to completion; see Runner.Run. A run that
// pauses for approvals (Result.Awaiting) cannot be continued from here: use
// New and Runner.Run to decide in the same process, or a Config.Store and
// Resume to decide in another.
func Run(ctx context.Context, model llm.Model, fn prompt.Func, cfg Config) (*Result, error) {
	return New(model, fn, cfg).Run(ctx)
}

// Prompt returns the prompt the runner executes, for reading state and
// definitions between steps.
func (r *Runner) Prompt() *prompt.Prompt { return r.p }

// Transcript returns the transcript so far (read-only).
func (r *Runner) Transcript() []defs.Message { return slices.Clip(r.transcript) }

// StepNumber returns the number of the next step.
func (r *Runner) StepNumber() int { return r.step }

// Stats returns the run's totals so far. It may be called from another
// goroutine while the run goes on (a progress report), unlike the
// runner's other methods.
func (r *Runner) Stats() effects.RunStats {
	r.usageMu.Lock()
	s, started := r.stats, r.started
	r.usageMu.Unlock()
	s.Elapsed = r.elapsedSince(started)
	return s
}

// Run runs steps until the run ends or pauses, and returns every step's
// record. On error the result holds the steps completed so far. It closes
// the runner (see Close) before it returns, unless the run paused for
// approvals (Result.Awaiting): then Approve or Deny every call and call Run
// again to continue, or Close the runner to abandon the run (with a store,
// its checkpoint stays paused, for Resume).
func (r *Runner) Run(ctx context.Context) (*Result, error) {
	if r.err == nil && r.done && !r.waitingMessages(ctx) {
		return r.result(nil), ErrDone
	}
	var steps []*Step
	var err error
	for s, serr := range r.All(ctx) {
		if s != nil {
			steps = append(steps, s)
		}
		if serr != nil {
			err = serr
		}
	}
	if err != nil || !r.paused() {
		if cerr := r.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	return r.result(steps), err
}

// result returns the Result of a Run that ran steps.
func (r *Runner) result(steps []*Step) *Result {
	res := &Result{Steps: steps, answer: r.conv.answer}
	res.Awaiting = r.Awaiting()
	res.Transcript = r.Transcript()
	res.store = r.p.Store()
	r.usageMu.Lock()
	res.Usage = r.usage
	r.usageMu.Unlock()
	res.Stats = r.Stats()
	switch n := len(res.Steps); {
	case n > 0 && res.Steps[n-1].Reply != nil:
		res.Text = res.Steps[n-1].Reply.Message.Content
		if out := res.Steps[n-1].Output; out != nil {
			res.Text = string(out)
		}
	case n == 0 && r.done:
		// A finished run (Run called again, or resumed): its last answer.
		if r.conv.answer != nil {
			res.Text = string(r.conv.answer)
		} else if i := len(r.transcript) - 1; i >= 0 && r.transcript[i].Role == defs.RoleAssistant {
			res.Text = r.transcript[i].Content
		}
	}
	return res
}

// All returns an iterator over the steps of the run, ending after the last
// one, or after a step that paused for approvals. A failing step is yielded
// with its error (and the record of what it did, if any) and ends the
// iteration. Breaking out of the loop leaves the run open, so that Next may
// continue it: defer Close to run the effects' pending cleanups.
func (r *Runner) All(ctx context.Context) iter.Seq2[*Step, error] {
	return func(yield func(*Step, error) bool) {
		for (!r.done || r.waitingMessages(ctx)) && r.err == nil && !r.paused() {
			s, err := r.Next(ctx)
			if !yield(s, err) || err != nil {
				return
			}
		}
	}
}

// Next runs one step and returns its record. After the last step it
// returns ErrDone; after a failure it returns the same error again. While
// calls await a decision (Step.Awaiting) it runs nothing and returns an
// error matching ErrAwaitingApproval; once all are decided, it completes
// the paused step. When the run ends or fails, Next closes the runner (see
// Close); a cleanup that panics then is the step's error.
func (r *Runner) Next(ctx context.Context) (*Step, error) {
	if r.err != nil {
		return nil, r.err
	}
	if r.paused() {
		return nil, r.awaitingError()
	}
	if err := r.checkNewSession(ctx); err != nil {
		r.err = err
		return nil, err
	}
	// The messages sent since the last step join the transcript now; to a
	// finished run, they start a new turn (conversation.go).
	sent, ok, err := r.takeMessages(ctx)
	if err != nil {
		r.err = err
		return nil, err
	}
	if !ok {
		return nil, ErrDone
	}
	if r.started.IsZero() {
		now := r.now()
		r.usageMu.Lock() // Stats reads it from any goroutine
		r.started = now
		r.usageMu.Unlock()
	}
	ctx = r.observeStep(ctx)
	r.recorder.begin(r)
	r.conv.sent = sent // for the step's record (Step.Sent)
	s, err := r.step1(ctx)
	r.conv.sent = nil
	r.conv.turnStarted = true
	r.observeStepEnd(ctx, s, err)
	if err != nil && s != nil && s.Done && errors.Is(err, ErrMaxSteps) {
		// The step limit ends the turn, not the conversation: a message
		// sent continues it (Continue).
		r.done = true
		if cerr := r.Close(); cerr != nil {
			err = errors.Join(err, cerr)
			r.err = err
		}
	} else if err != nil {
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

// Unwrap returns the panic value when it is an error (panic(err)), so that
// errors.Is and errors.As see through the panic; otherwise nil.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
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
	return r.c().Effects().Close()
}

// elapsedSince returns the run's elapsed time for a run that started (in
// this process) at started. elapsed0 is set before the run starts.
func (r *Runner) elapsedSince(started time.Time) time.Duration {
	if started.IsZero() {
		return r.elapsed0
	}
	return r.elapsed0 + r.now().Sub(started)
}

func (r *Runner) maxSteps() int {
	if r.cfg.MaxSteps == 0 {
		return DefaultMaxSteps
	}
	return r.cfg.MaxSteps
}

// stepRequest is a step's record and its first request, allocated
// together.
type stepRequest struct {
	step Step
	req  llm.Request
}

func (r *Runner) next(ctx context.Context) (*Step, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n := r.step
	sr := &stepRequest{step: Step{Number: n, Turn: r.conv.turn, Sent: r.conv.sent}}
	rec := &sr.step
	r.spareReq = &sr.req // for the step's first request (see render)
	reg := r.c().Registry()
	reg.BeginStep()

	// Stages 1–2 of "A step" (doc.go): execute the prompt function;
	// reconcile definitions.
	added, err := r.execute(ctx, n)
	if err != nil {
		return rec, err
	}
	r.grow(len(added))
	r.transcript = append(r.transcript, added...)

	// Stage 3: the effects before the call.
	es := r.effectStep(n, &r.before)
	ran, err := r.c().Effects().Run(ctx, effects.BeforeCall, es)
	rec.Effects = ran
	if err != nil {
		return rec, err
	}

	// Stages 4–5: apply their changes, render, check, send.
	req, err := r.prepare(n, rec, es.Mods())
	if err != nil {
		return rec, err
	}
	reply, err := r.call(ctx, req)
	if err != nil && contextTooLong(err) {
		req, reply, err = r.recover(ctx, n, rec, es, err)
	}
	if err != nil {
		return rec, &StepError{Step: n, Op: OpModel, Err: err}
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
	given, held := r.classify(reply.Message, req.Tools) // calls that need approval (approval.go)
	if err := r.savePending(ctx, reply.Message, nil); err != nil {
		return rec, &StepError{Step: n, Op: OpCheckpoint, Err: err}
	}
	if len(held) > 0 {
		return r.pause(ctx, rec, req.Tools, given, held)
	}
	return r.complete(ctx, rec, req.Tools, given)
}

// complete finishes a step whose reply is in rec: it runs the tool calls
// (those without a result in given), appends the reply and the results to
// the transcript, runs the after-reply effects, saves a checkpoint and
// decides whether the run goes on.
func (r *Runner) complete(ctx context.Context, rec *Step, offered []llm.ToolSpec, given map[string]defs.ToolResult) (*Step, error) {
	n := rec.Number
	reply := rec.Reply

	// Stage 6: the tools, concurrently, results in call order. The reply
	// joins the transcript once they are done: until then checkpoints hold
	// it as pending.
	calls := reply.Message.ToolCalls
	stopTool := false
	if len(calls) > 0 {
		var err error
		rec.ToolResults, err = r.runCalls(ctx, reply.Message, offered, given, nil)
		rec.Agents = r.takeAgentRuns(calls)
		rec.ToolErrors = r.takeToolErrors()
		if se, ok := err.(*StepError); ok {
			se.Step = n // runCalls does not know the step's number
		}
		if err != nil {
			return rec, err
		}
		if asks := r.takeAsks(); len(asks) > 0 {
			return r.pauseForAnswers(ctx, rec, asks) // ask.go
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
	answered, feedback, outErr := r.settleOutput(rec)
	if feedback != nil {
		r.grow(1)
		r.transcript = append(r.transcript, *feedback)
	}

	// Stage 7: the effects after the reply.
	es := r.effectStep(n, &r.after)
	es.Reply = &reply.Message
	es.Results = rec.ToolResults
	ran, err := r.c().Effects().Run(ctx, effects.AfterReply, es)
	rec.Effects = append(rec.Effects, ran...)
	if err != nil {
		return rec, err
	}
	if mods := es.Mods(); mods.Committed {
		if err := r.commit(mods.Transcript); err != nil {
			return rec, &StepError{Step: n, Op: OpValidate, Err: err}
		}
		rec.Committed = true
	}

	// Stage 8: the record, the checkpoint, and whether the run goes on.
	rec.State = r.stateSnapshot()
	r.step++
	var stepErr error
	switch {
	case outErr != nil:
		rec.Done = true
		stepErr = outErr
	case answered, stopTool, len(calls) == 0 && feedback == nil:
		rec.Done = true
	case r.cfg.StopWhen != nil && r.cfg.StopWhen(rec):
		rec.Done = true
	case r.maxSteps() > 0 && r.step-r.conv.turnStart >= r.maxSteps():
		rec.Done = true
		stepErr = fmt.Errorf("%w: %d steps, and the model still called tools", ErrMaxSteps, r.maxSteps())
	}
	r.recorder.end(rec)
	if err := r.save(ctx, rec.Done, nil); err != nil {
		return rec, &StepError{Step: n, Op: OpCheckpoint, Err: err}
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
	// The ids used so far: those of the transcript, which the validator
	// holds for the messages it has read (all of them once the request
	// was checked), those commits took out of it, and those of m's calls
	// before the one at hand.
	read := r.valid.n
	copied := false
	taken := func(id string, i int) bool {
		if _, ok := r.valid.seen[id]; ok {
			return true
		}
		if _, ok := r.retired[id]; ok {
			return true
		}
		for _, msg := range r.transcript[read:] {
			for _, c := range msg.ToolCalls {
				if c.ID == id {
					return true
				}
			}
		}
		for _, c := range m.ToolCalls[:i] {
			if c.ID == id {
				return true
			}
		}
		return false
	}
	for i, c := range m.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", step, i)
		}
		for k := 2; taken(id, i); k++ {
			id = fmt.Sprintf("%s_%d", cmp.Or(c.ID, fmt.Sprintf("call_%d_%d", step, i)), k)
		}
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
	keep, err := r.valid.checkCommit(r.transcript, msgs)
	if err != nil {
		return err
	}
	// The call ids msgs drops stay used (see uniqueCallIDs, callids.go).
	// When the validator keeps its state, msgs keeps the ids it read.
	gone, kept := r.transcript, msgs
	if keep {
		gone, kept = gone[r.valid.n:], kept[r.valid.n:]
	}
	r.retire(gone, kept)
	r.observeCommit(msgs)
	r.recorder.commit(len(r.transcript), len(msgs))
	r.transcript = slices.Clip(msgs)
	r.appended = false
	if !keep {
		r.valid.reset()
	}
	r.generation++
	return nil
}

// prepare applies the effects' changes and renders and checks the request.
func (r *Runner) prepare(n int, rec *Step, mods *stepmods.Mods) (*llm.Request, error) {
	if mods.Committed && !sameSlice(mods.Transcript, r.transcript) {
		if err := r.commit(mods.Transcript); err != nil {
			return nil, &StepError{Step: n, Op: OpValidate, Err: err}
		}
		rec.Committed = true
	}
	req, verbatim, err := r.render(n, mods)
	if err != nil {
		return nil, err
	}
	rec.Request = req
	reg := r.c().Registry()
	rec.Disabled = reg.DisabledRefs()
	rec.Reminded = reg.Reminded()
	if err := r.valid.check(r.transcript, req.Messages, verbatim); err != nil {
		return nil, &StepError{Step: n, Op: OpValidate, Err: err}
	}
	r.ledger.sync(r.transcript)
	rec.InputTokens, rec.PrefixTokens = r.ledger.requestTokens(req, verbatim)
	frac := r.cfg.CachedInputFraction
	if frac == 0 {
		frac = llm.DefaultCachedInputFraction
	}
	rec.BilledInput = float64(rec.InputTokens-rec.PrefixTokens) + frac*float64(rec.PrefixTokens)
	return req, nil
}

// contextTooLong reports whether err is a *ModelError rejecting the
// request as too long. (Its own function, so that the target of errors.As
// is allocated only for a failed call.)
func contextTooLong(err error) bool {
	var me *llm.ModelError
	return errors.As(err, &me) && me.ContextTooLong
}

// recover handles a request rejected as too long: the Recovery effects run
// once, and the request is rendered and sent again.
// The Recovery effects run on the step the BeforeCall effects prepared, so
// the changes those made (limits, variables, appended messages) hold for
// the request sent again.
func (r *Runner) recover(ctx context.Context, n int, rec *Step, es *effects.Step, cause error) (*llm.Request, *llm.Reply, error) {
	ran, ok, err := r.c().Effects().RunRecovery(ctx, es)
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
func (r *Runner) account(u llm.Usage) {
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
	reg := r.c().Registry()
	*es = *effects.NewStep(n, slices.Clip(r.transcript))
	es.Tools = reg.Collection(defs.KindTool)
	es.Systems = reg.Collection(defs.KindSystem)
	es.Variables = reg.Collection(defs.KindVariable)
	es.LastTool = r.lastTool
	r.ledger.sync(r.transcript)
	if r.ledger.prev == nil {
		// No request yet: count the system prompt and tools as declared,
		// before any effect changed them.
		var none stepmods.Mods
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

func (r *Runner) render(n int, mods *stepmods.Mods) (req *llm.Request, verbatim int, err error) {
	reg := r.c().Registry()
	sys, err := r.renderer.system(reg, mods)
	if err != nil {
		return nil, 0, &StepError{Step: n, Op: OpRender, Err: err}
	}
	msgs := slices.Clip(r.transcript)
	verbatim = len(msgs)
	if mods.Viewed {
		msgs, verbatim = slices.Clip(mods.Messages), mods.Verbatim
	}
	if refs := reg.Reminded(); len(refs) > 0 {
		msgs = append(msgs, reminderMessage(refs)) // msgs is clipped: this copies
	}
	req = r.spareReq
	r.spareReq = nil
	if req == nil {
		req = new(llm.Request)
	}
	*req = llm.Request{System: sys, Messages: msgs, Tools: r.renderer.tools(reg, mods), Agent: r.agent, Step: n}
	if err := r.renderOutput(req); err != nil {
		return nil, 0, &StepError{Step: n, Op: OpRender, Err: err}
	}
	return req, verbatim, nil
}

func (r *Runner) call(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	return r.callModel(ctx, r.model, req)
}

func (r *Runner) callModel(ctx context.Context, m llm.Model, req *llm.Request) (*llm.Reply, error) {
	backoff := r.cfg.RetryBackoff
	if backoff <= 0 {
		backoff = time.Second
	}
	for attempt := 0; ; attempt++ {
		reply, err := r.callOnce(ctx, m, req)
		if err == nil || attempt >= r.cfg.Retries || !llm.IsRetryable(err) {
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

func (r *Runner) callOnce(ctx context.Context, m llm.Model, req *llm.Request) (*llm.Reply, error) {
	ctx, span := r.observeCall(ctx, req)
	if r.cfg.ModelTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.cfg.ModelTimeout)
		defer cancel()
	}
	var reply *llm.Reply
	var err error
	if sm, ok := m.(llm.StreamingModel); ok && r.cfg.OnDelta != nil && req.Purpose == llm.PurposeStep {
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
	req := &llm.Request{System: system, Messages: []defs.Message{defs.UserMessage(user)}, Agent: c.r.agent, Step: c.r.step, Purpose: llm.PurposeSummary}
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
