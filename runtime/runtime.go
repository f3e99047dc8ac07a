package runtime

import (
	"context"
	"errors"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/internal/callsite"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/session"
)

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
	elapsed0   time.Duration // elapsed time before started: restored from a checkpoint, and of the turns before (guarded by usageMu)
	renderer   renderer
	ledger     *ledger
	valid      validator
	// Made once, as method values and interface conversions allocate.
	count     func([]defs.Message) int
	prefix    func(int) int
	completer effects.Completer
	// Sessions (see save.go).
	seq        int64
	generation int   // incremented by every rewrite of the transcript
	prevRec    *Step // the record of the last request rendered, for cacheMiss
	prevGen    int   // generation when it was rendered
	// sentRec and sentGen are prevRec and prevGen before the last request
	// was rendered: those of the last request sent, should the provider
	// reject that one (see unsend).
	sentRec *Step
	sentGen int
	// The reply's finish reason and the messages sent at the start of the
	// step whose reply savePending saves (session.Pending), for its record
	// once resumed.
	pendFinish llm.FinishReason
	pendSent   []defs.Message
	savedGen   int            // generation of the last checkpoint saved
	saved      []defs.Message // transcript of the last checkpoint saved
	pending    *session.Pending
	restored   bool                // pending comes from a checkpoint (Resume)
	approvals  []session.Approval  // the calls of the step under way that need approval (approval.go)
	offered    []string            // tools offered by the request of the step under way
	retired    map[string]struct{} // call ids of messages commits took out of the transcript (see uniqueCallIDs)
	batch      *callBatch          // kept for the next reply's calls (see newBatch)
	lastReq    *reqMessages        // the messages of the last request recorded (see recordRequest)
	lastMsgs   []defs.Message      // and the same as a slice, to compare the next request with
	saveMu     sync.Mutex
	usageMu    sync.Mutex // guards usage and stats
	obs        observer   // tracing and logging (see observe.go)
	// The session's incarnation (session.Checkpoint.Incarnation), carried
	// from save to save as seq is.
	incarnation int64
	// The retired call ids in the order they were retired, as checkpoints
	// keep them (see callids.go).
	retiredList []string
	// Records for the step under way (see record.go).
	agent     string // the sub-agent this runner runs; "" for a top run
	sessionID string // the session its requests belong to (llm.Request.SessionID): Config.SessionID, or its parent's
	recMu     sync.Mutex
	agentRuns []*AgentRun
	summaries []*Summary
	toolErrMu sync.Mutex // guards toolErrs
	toolErrs  map[string]error
	misuse    error        // a tool's programmer's mistake (programmerError), guarded by toolErrMu
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

// New returns a runner for fn against model.
func New(model llm.Model, fn prompt.Func, cfg Config) *Runner {
	r := &Runner{model: model, fn: fn, cfg: cfg, p: prompt.New(""), ledger: newLedger(cfg.Counter), sessionID: cfg.SessionID}
	r.renderer.stable = cfg.StableTools
	r.count, r.prefix, r.completer = r.ledger.count, r.ledger.prefix, completer{r}
	if cfg.Summarizer == nil {
		r.completer = continuer{completer{r}}
	}
	r.obs = newObserver(r)
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
	s, started, elapsed := r.stats, r.started, r.elapsed0
	r.usageMu.Unlock()
	if !started.IsZero() {
		elapsed += r.now().Sub(started)
	}
	s.Elapsed = elapsed
	return s
}

// stopClock stops the clock of the run's elapsed time when the run ends a
// turn, pauses or fails: the time until the next step (the user's next
// message, a decision) is not the run's, in process as after Resume,
// which cannot count it. Next starts the clock again.
func (r *Runner) stopClock() {
	r.usageMu.Lock()
	defer r.usageMu.Unlock()
	if !r.started.IsZero() {
		r.elapsed0 += r.now().Sub(r.started)
		r.started = time.Time{}
	}
}

// Run runs steps until the run ends or pauses, and returns every step's
// record. On error the result holds the steps completed so far; on a runner
// that failed before, Run runs nothing and returns that error again. It closes
// the runner (see Close) before it returns, unless the run paused for
// approvals (Result.Awaiting): then Approve or Deny every call and call Run
// again to continue, or Close the runner to abandon the run (with a store,
// its checkpoint stays paused, for Resume).
func (r *Runner) Run(ctx context.Context) (*Result, error) {
	if r.err == nil && (r.closed && r.paused() || r.done && !r.waitingMessages(ctx)) {
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
// iteration; on a runner that failed before, it yields that error again
// (Run and Continue return it). Breaking out of the loop leaves the run open, so that Next may
// continue it: defer Close to run the effects' pending cleanups.
func (r *Runner) All(ctx context.Context) iter.Seq2[*Step, error] {
	return func(yield func(*Step, error) bool) {
		if r.err != nil {
			// A failed run: its error again, as Next returns it, never an
			// empty iteration that Run would report as success.
			yield(nil, r.err)
			return
		}
		for (!r.done || r.waitingMessages(ctx)) && r.err == nil && !r.paused() {
			s, err := r.Next(ctx)
			if !yield(s, err) || err != nil {
				return
			}
		}
	}
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
		if r.closed {
			// Abandoned while paused (Close): the decisions are refused
			// (ErrDone), so the step cannot complete in this runner.
			return nil, ErrDone
		}
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
	ctx = r.obs.stepStarted(ctx, r.step)
	r.recorder.begin(r)
	r.conv.sent = sent // for the step's record (Step.Sent)
	s, err := r.step1(ctx)
	r.conv.sent = nil
	r.conv.turnStarted = true
	r.obs.stepEnded(ctx, s, err)
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
	if r.done || r.err != nil || r.paused() {
		r.stopClock()
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

// next runs a new step, stage by stage (see "A step" in doc.go): each
// stage is a method in the file named for it.
func (r *Runner) next(ctx context.Context) (*Step, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rec, es, req, err := r.prepare(ctx) // stages 1–4 (prepare.go)
	if err != nil {
		return rec, err
	}
	offered, err := r.call(ctx, rec, es, req) // stage 5 (call.go)
	if err != nil {
		return rec, err
	}
	reply := rec.Reply.Message
	given, held := r.classify(reply, offered) // calls that need approval (approval.go)
	r.pendFinish, r.pendSent = rec.Reply.FinishReason, rec.Sent
	if err := r.savePending(ctx, reply, nil); err != nil {
		return rec, &StepError{Step: rec.Number, Op: OpCheckpoint, Err: err}
	}
	if len(held) > 0 {
		return r.pause(ctx, rec, offered, given, held)
	}
	return r.complete(ctx, rec, offered, given)
}

// complete finishes a step whose reply is in rec: it runs the tool calls
// (those without a result in given), runs the after-reply effects,
// completes the record, saves a checkpoint and decides whether the run
// goes on.
func (r *Runner) complete(ctx context.Context, rec *Step, offered []llm.ToolSpec, given map[string]defs.ToolResult) (*Step, error) {
	stop, asks, err := r.runTools(ctx, rec, offered, given) // stage 6 (tools.go)
	if err != nil {
		return rec, err
	}
	if asks != nil {
		return r.pauseForAnswers(ctx, rec, asks) // ask.go
	}
	endErr, err := r.settle(ctx, rec, stop) // stages 7–8 (settle.go)
	if err != nil {
		return rec, err
	}
	if err := r.save(ctx, rec.Done, nil); err != nil { // stage 8 (save.go)
		return rec, &StepError{Step: rec.Number, Op: OpCheckpoint, Err: err}
	}
	return rec, endErr
}
