package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
)

// agentRun is one workflow run of an agent: the runtime's loop in workflow
// code.
type agentRun struct {
	ctx      workflow.Context
	reg      *registry
	agent    *Agent
	in       Input
	store    *latest
	runner   *runtime.Runner
	inbox    []Inbound
	received int
	steps    []StepRecord // the last ones
	waiting  bool
	stepping bool // runner.Next runs: no decision is taken (approval.go)
}

// run is the workflow function.
func (reg *registry) run(ctx workflow.Context, in Input) (*Result, error) {
	a, err := reg.agent(in.Agent)
	if err != nil {
		return nil, err
	}
	w := &agentRun{ctx: ctx, reg: reg, agent: a, in: in, store: &latest{}, inbox: in.Inbox, received: in.Received, steps: in.Steps}
	if in.Message != "" && in.Checkpoint == nil {
		w.inbox = append(w.inbox, Inbound{N: w.received, Text: in.Message})
		w.received++
	}
	if err := workflow.SetQueryHandler(ctx, QueryStatus, w.status); err != nil {
		return nil, err
	}
	if err := w.setUpdateHandler(); err != nil {
		return nil, err
	}
	signals := workflow.GetSignalChannel(ctx, SignalMessage)
	receive := func(text string) {
		w.inbox = append(w.inbox, Inbound{N: w.received, Text: text})
		w.received++
	}

	cfg := w.config()
	fn := w.wrap(a.Prompt)
	model := &activityModel{ctx: ctx, agent: a}
	bg := context.Background()
	if in.Checkpoint != nil {
		cp, err := in.Checkpoint.Decode()
		if err != nil {
			return nil, temporal.NewNonRetryableApplicationError("temporal: the checkpoint carried across continue-as-new does not decode: "+err.Error(), "CorruptCheckpoint", err)
		}
		w.store.cp = cp
		cfg.SessionID = cp.SessionID // the workflow's id when it started
		if cp.Done {
			w.waiting = true
		} else if w.runner, err = runtime.Resume(bg, model, fn, cfg); err != nil {
			return nil, err
		}
	} else if in.Task != "" {
		w.runner = runtime.NewAgent(model, fn, cfg, a.Name, in.Task)
	} else {
		w.runner = runtime.New(model, fn, cfg)
	}

	limit := a.ContinueAfter
	if limit <= 0 {
		limit = DefaultContinueAfter
	}
	if in.Task != "" {
		limit, in.Idle = math.MaxInt, 0 // a sub-agent's run: bounded by its step limit
	}
	for n := 0; ; {
		for {
			var text string
			if !signals.ReceiveAsync(&text) {
				break
			}
			receive(text)
		}
		if w.waiting {
			if len(w.inbox) == 0 {
				if in.Idle <= 0 {
					return w.result()
				}
				timeout := false
				timer := workflow.NewTimer(ctx, in.Idle)
				sel := workflow.NewSelector(ctx)
				sel.AddReceive(signals, func(c workflow.ReceiveChannel, more bool) {
					var text string
					c.Receive(ctx, &text)
					receive(text)
				})
				sel.AddFuture(timer, func(workflow.Future) { timeout = true })
				sel.Select(ctx)
				if timeout {
					return w.result()
				}
			}
			// A message continues the run that ended: from its checkpoint,
			// no longer marked done.
			w.store.cp.Done = false
			var err error
			if w.runner, err = runtime.Resume(bg, model, fn, cfg); err != nil {
				return nil, err
			}
			w.waiting = false
		}
		if n >= limit || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			return nil, w.continueAsNew() // a paused step's checkpoint holds its approvals
		}
		if w.paused() {
			// Tool calls await decisions (UpdateDecide): wait for them all,
			// receiving messages meanwhile (added after the paused step).
			if err := workflow.Await(ctx, func() bool {
				return !w.paused() || signals.Len() > 0 || workflow.GetInfo(ctx).GetContinueAsNewSuggested()
			}); err != nil {
				return nil, err
			}
			continue
		}
		adding := len(w.inbox)
		if cp := w.store.cp; cp != nil && cp.Pending != nil {
			// The step completes a paused one: its execution adds no
			// message (they belong to the next step).
			adding = 0
		}
		w.stepping = true
		s, err := w.runner.Next(bg)
		w.stepping = false
		if s != nil {
			w.record(s)
		}
		if err != nil {
			return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("agent %q: %v", a.Name, err), "RunError", err)
		}
		w.inbox = slices.Delete(w.inbox, 0, adding) // the step's execution added them
		n++
		if len(s.Awaiting) > 0 && in.Task != "" {
			// A sub-agent runs inside one tool call of its parent: it
			// cannot wait for a decision (as runtime.Runner.RunAgent).
			err := errors.Join(&runtime.SubAgentApprovalError{Agent: a.Name, Call: s.Awaiting[0]}, w.runner.Close())
			return nil, temporal.NewNonRetryableApplicationError(err.Error(), "SubAgentApprovalError", nil)
		}
		if s.Done {
			w.waiting = true
		}
	}
}

// config is the runtime's configuration in workflow code.
func (w *agentRun) config() runtime.Config {
	cfg := w.agent.Config
	cfg.Name = w.agent.Name
	cfg.Store, cfg.SessionID = w.store, workflow.GetInfo(w.ctx).WorkflowExecution.ID
	cfg.Retries, cfg.ModelTimeout, cfg.ToolTimeout = 0, 0, 0
	cfg.Summarizer = nil // answered in the model activity
	cfg.OnDelta, cfg.Logger, cfg.TracerProvider = nil, nil, nil
	cfg.Now = func() time.Time { return workflow.Now(w.ctx) } // deterministic: Stats.Elapsed, time limits
	cfg.ToolExecutor = &executor{ctx: w.ctx, agent: w.agent, reg: w.reg}
	return cfg
}

// wrap adds the messages received by signal to fn's declarations, each
// under a key of its own, so that each is added once.
func (w *agentRun) wrap(fn prompt.Func) prompt.Func {
	return func(p *prompt.Prompt) error {
		if err := fn(p); err != nil {
			return err
		}
		for _, m := range w.inbox {
			p.User(m.Text, prompt.MessageKey(fmt.Sprintf("reprompt.temporal.message.%d", m.N)))
		}
		return nil
	}
}

func (w *agentRun) record(s *runtime.Step) {
	rec := StepRecord{Number: s.Number, InputTokens: s.InputTokens, Done: s.Done}
	for _, a := range s.Awaiting {
		rec.Awaiting = append(rec.Awaiting, a.CallID)
	}
	for _, d := range s.Decisions {
		rec.Decisions = append(rec.Decisions, Decision{CallID: d.CallID, Approve: d.Approved, Reason: d.Reason})
	}
	if s.Reply != nil {
		rec.Reply = Message{s.Reply.Message}
		rec.Usage = s.Reply.Usage
	}
	for _, r := range s.ToolResults {
		rec.ToolResults = append(rec.ToolResults, ToolResult{CallID: r.CallID, Name: r.Name, Content: r.Content, IsError: r.IsError})
	}
	for _, e := range s.Effects {
		rec.Effects = append(rec.Effects, fmt.Sprintf("%s %s: %s", e.ID, e.Phase, e.Reason))
	}
	keep := w.agent.LastSteps
	if keep <= 0 {
		keep = DefaultLastSteps
	}
	w.steps = append(w.steps, rec)
	if len(w.steps) > keep {
		w.steps = slices.Delete(w.steps, 0, len(w.steps)-keep)
	}
}

func (w *agentRun) status() (*Status, error) {
	st := &Status{Agent: w.agent.Name, Waiting: w.waiting, Steps: w.steps, Inbox: len(w.inbox), Awaiting: w.awaiting()}
	if cp := w.store.cp; cp != nil {
		st.Step, st.State, st.Transcript = cp.Step, cp.State, len(cp.Transcript)
	}
	if w.runner != nil {
		st.Step = w.runner.StepNumber()
		st.Transcript = len(w.runner.Transcript())
		var err error
		if st.State, err = w.runner.Prompt().Store().MarshalJSON(); err != nil {
			return nil, err
		}
	}
	return st, nil
}

func (w *agentRun) continueAsNew() error {
	cp, err := EncodeCheckpoint(w.store.cp)
	if err != nil {
		return err
	}
	next := Input{Agent: w.in.Agent, Idle: w.in.Idle, Checkpoint: cp, Inbox: w.inbox, Received: w.received, Steps: w.steps}
	return workflow.NewContinueAsNewError(w.ctx, WorkflowName, next)
}

func (w *agentRun) result() (*Result, error) {
	cp := w.store.cp
	if cp == nil {
		return nil, errors.New("temporal: the run ended without a checkpoint")
	}
	return &Result{
		Text:       lastReply(cp.Transcript),
		Steps:      cp.Stats.Steps,
		Transcript: wrapMessages(cp.Transcript),
		State:      cp.State,
		Usage:      llm.Usage{InputTokens: cp.Stats.InputTokens, OutputTokens: cp.Stats.OutputTokens, CachedTokens: cp.Stats.CachedTokens},
	}, nil
}

func lastReply(msgs []defs.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == defs.RoleAssistant {
			return msgs[i].Content
		}
	}
	return ""
}

// activityModel is the llm.Model of workflow code: each call is an
// activity. It is called on the workflow's goroutine only (the runtime
// calls the model from its loop, and effects' summaries from the effects,
// which run there too).
type activityModel struct {
	ctx   workflow.Context
	agent *Agent
}

func (m *activityModel) Generate(_ context.Context, req *llm.Request) (*llm.Reply, error) {
	timeout := m.agent.Config.ModelTimeout
	if timeout <= 0 {
		timeout = DefaultModelTimeout
	}
	retry := m.agent.ModelRetry
	if retry == nil {
		retry = &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumAttempts: DefaultAttempts}
	}
	ctx := workflow.WithActivityOptions(m.ctx, workflow.ActivityOptions{StartToCloseTimeout: timeout, HeartbeatTimeout: DefaultHeartbeat, RetryPolicy: retry})
	var out reply
	err := workflow.ExecuteActivity(ctx, ActivityGenerate, generateInput{Agent: m.agent.Name, Request: wireRequest(req)}).Get(ctx, &out)
	if err != nil {
		return nil, modelError(err)
	}
	return &llm.Reply{Message: out.Message.Message, Usage: out.Usage, FinishReason: out.FinishReason, ID: out.ID}, nil
}

// executor runs a reply's tool calls as parallel activities, results in
// call order.
type executor struct {
	ctx   workflow.Context
	agent *Agent
	reg   *registry
}

func (x *executor) ExecuteTools(_ context.Context, c *runtime.ToolCalls) error {
	st, err := c.State()
	if err != nil {
		return err
	}
	offered := c.Offered()
	futures := make([]workflow.Future, c.Len())
	children := make([]bool, c.Len()) // sub-agents run as child workflows
	for _, i := range c.Pending() {
		call := c.Call(i)
		tool, declared := c.Tool(i)
		if !declared || !slices.Contains(offered, call.Name) {
			c.Run(i) // refused without running anything: no activity
			continue
		}
		if _, registered := x.reg.agents[call.Name]; tool.Agent && registered {
			var args prompt.AgentArgs
			raw := call.Arguments
			if len(raw) == 0 {
				raw = []byte("{}")
			}
			if (tool.Validate != nil && tool.Validate(call.Arguments) != nil) || json.Unmarshal(raw, &args) != nil {
				c.Run(i) // refused: the usual error result, nothing runs
				continue
			}
			ctx := workflow.WithChildOptions(x.ctx, workflow.ChildWorkflowOptions{
				WorkflowID: workflow.GetInfo(x.ctx).WorkflowExecution.ID + "/" + call.ID})
			futures[i] = workflow.ExecuteChildWorkflow(ctx, WorkflowName, Input{Agent: call.Name, Task: args.Task})
			children[i] = true
			continue
		}
		ctx := workflow.WithActivityOptions(x.ctx, x.options(call.Name, tool))
		futures[i] = workflow.ExecuteActivity(ctx, ActivityTool, toolInput{
			Agent: x.agent.Name, Input: c.Input(), SubAgent: c.Agent(), Step: c.Step(), State: st, Offered: offered,
			Call: toolCall{ID: call.ID, Name: call.Name, Arguments: call.Arguments},
		})
	}
	for _, i := range c.Pending() {
		if futures[i] == nil {
			continue
		}
		if children[i] {
			if err := x.finishChild(c, i, futures[i]); err != nil {
				return err
			}
			continue
		}
		var out toolOutput
		if err := futures[i].Get(x.ctx, &out); err != nil {
			call := c.Call(i)
			content := fmt.Sprintf("error: tool call interrupted: the activity running %q failed (%v), and it was not run again", call.Name, activityCause(err))
			if ferr := c.Finish(i, content, true, nil, err); ferr != nil {
				return ferr
			}
			continue
		}
		var toolErr error
		if out.Err != "" {
			toolErr = errors.New(out.Err)
		}
		if err := c.Finish(i, out.Content, out.IsError, out.Changes, toolErr); err != nil {
			return err
		}
	}
	return nil
}

// finishChild records the answer of the sub-agent call i ran as a child
// workflow: its last reply, or the error result RunAgent's failure gives.
func (x *executor) finishChild(c *runtime.ToolCalls, i int, f workflow.Future) error {
	name := c.Call(i).Name
	var res Result
	if err := f.Get(x.ctx, &res); err != nil {
		cause := activityCause(err)
		if ae, ok := errors.AsType[*temporal.ApplicationError](cause); ok && ae.Type() == "SubAgentApprovalError" {
			cause = errors.New(ae.Message()) // the text of the error in process
		}
		err = fmt.Errorf("sub-agent %q: %w", name, cause)
		return c.Finish(i, fmt.Sprintf("error: tool %q failed: %v", name, err), true, nil, err)
	}
	return c.Finish(i, res.Text, false, nil, nil)
}

// options returns the activity options of a call of the tool name.
func (x *executor) options(name string, tool *defs.Tool) workflow.ActivityOptions {
	o := x.agent.Tools[name]
	opts := workflow.ActivityOptions{StartToCloseTimeout: o.Timeout, HeartbeatTimeout: o.Heartbeat, RetryPolicy: o.Retry}
	if opts.StartToCloseTimeout <= 0 {
		opts.StartToCloseTimeout = x.agent.Config.ToolTimeout
		if opts.StartToCloseTimeout <= 0 {
			opts.StartToCloseTimeout = DefaultToolTimeout
		}
	}
	if opts.HeartbeatTimeout <= 0 {
		opts.HeartbeatTimeout = DefaultHeartbeat
	}
	if opts.RetryPolicy == nil {
		if tool.Idempotent {
			opts.RetryPolicy = &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumAttempts: DefaultAttempts}
		} else {
			opts.RetryPolicy = &temporal.RetryPolicy{MaximumAttempts: 1}
		}
	}
	return opts
}

// activityCause returns the innermost cause of an activity's failure, for
// the model's text.
func activityCause(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}
