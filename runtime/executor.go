package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/internal/core"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/state"
)

// ToolExecutor runs the tool calls of one reply in place of the runtime,
// which otherwise runs them itself, each in a goroutine of its own (see
// Config.ToolExecutor). An executor decides where a call runs: here, with
// ToolCalls.Run, or elsewhere — another process, a durable-execution
// engine's activity — reporting what it returned with ToolCalls.Finish.
//
// The package temporal of the nested module github.com/reprompt/reprompt/temporal
// is such an executor: a workflow cannot start goroutines or sleep, so it
// runs each call as an activity, and the activity obtains the tool by
// executing the prompt function again with RunTool.
type ToolExecutor interface {
	// ExecuteTools runs the calls calls.Pending() names and reports the
	// result of each, in any order, before it returns. A call it leaves
	// without a result fails the step. An error it returns fails the step
	// too (a *StepError with Op OpTools).
	ExecuteTools(ctx context.Context, calls *ToolCalls) error
}

// ToolCalls is the tool calls of one reply handed to a ToolExecutor. Their
// results are recorded in call order whatever order they are reported in,
// and so are their state changes (see Config.ToolExecutor). Its methods are
// safe for concurrent use; it is valid only during ExecuteTools.
type ToolCalls struct {
	b       *callBatch
	pending []int
}

// Step returns the number of the step the calls belong to.
func (c *ToolCalls) Step() int { return c.b.r.step }

// Agent returns the name of the sub-agent whose reply made the calls; ""
// for a top run.
func (c *ToolCalls) Agent() string { return c.b.r.agent }

// Input returns the input of the prompt whose reply made the calls
// (prompt.Prompt.Input: a sub-agent's task; "" for a top run).
func (c *ToolCalls) Input() string { return c.b.r.p.Input() }

// Len returns the number of calls in the reply.
func (c *ToolCalls) Len() int { return len(c.b.slots) }

// Pending returns the indexes, in call order, of the calls to run: all of
// them, except after Resume, where the calls completed before the crash
// keep their results.
func (c *ToolCalls) Pending() []int { return slices.Clone(c.pending) }

// Call returns call i of the reply.
func (c *ToolCalls) Call(i int) defs.ToolCall { return c.b.reply.ToolCalls[i] }

// Offered returns the names of the tools the step's request offered; a
// call of another tool is refused when it runs.
func (c *ToolCalls) Offered() []string {
	names := make([]string, len(c.b.offered))
	for i, t := range c.b.offered {
		names[i] = t.Name
	}
	return names
}

// Tool returns the declaration of the tool call i names, as the prompt
// function declared it for this step, and whether it is declared.
func (c *ToolCalls) Tool(i int) (*defs.Tool, bool) {
	def, ok := c.b.r.c().Registry().Lookup(defs.KindTool, c.Call(i).Name)
	if !ok || def.Tool == nil {
		return nil, false
	}
	return def.Tool, true
}

// State returns the JSON of the prompt's state as it is now: before any
// call is finished, the state every call of the step starts from.
func (c *ToolCalls) State() (json.RawMessage, error) { return c.b.r.p.Store().MarshalJSON() }

// Run runs call i on the calling goroutine as the runtime does without an
// executor, and records its result.
func (c *ToolCalls) Run(i int) { c.b.run(i) }

// Finish records the result of call i, run elsewhere: its content, whether
// it is an error result, the state keys it set with their new values as
// JSON (applied, in key order, once every call before it is finished), and
// the Go error behind an error result, for Step.ToolErrors (may be nil). A
// second Finish of the same call, or a value that is not valid JSON, is an
// error.
func (c *ToolCalls) Finish(i int, content string, isError bool, changes map[string]json.RawMessage, toolErr error) error {
	b := c.b
	if i < 0 || i >= len(b.slots) {
		return fmt.Errorf("ToolCalls.Finish: no call %d in a reply of %d calls", i, len(b.slots))
	}
	call := b.reply.ToolCalls[i]
	b.mu.Lock()
	s := &b.slots[i]
	finished, tx := s.finished || s.claimed, s.tx
	s.claimed = true // a concurrent Finish of the same call fails, and records nothing
	b.mu.Unlock()
	if finished || tx == nil {
		return fmt.Errorf("ToolCalls.Finish: call %q already has a result", call.ID)
	}
	for k, v := range changes { // all or nothing: check them all before recording any
		if !json.Valid(v) {
			b.mu.Lock()
			s.claimed = false // not recorded: it may be finished again
			b.mu.Unlock()
			return fmt.Errorf("ToolCalls.Finish: call %q: state %q: the value is not valid JSON", call.ID, k)
		}
	}
	if len(changes) > 0 {
		txctx := state.ContextWithTx(context.Background(), tx)
		for _, k := range slices.Sorted(maps.Keys(changes)) {
			if err := state.SetJSON(txctx, b.r.p.Store(), k, changes[k]); err != nil {
				b.mu.Lock()
				s.claimed = false // not recorded: it may be finished again
				b.mu.Unlock()
				return fmt.Errorf("ToolCalls.Finish: call %q: %w", call.ID, err)
			}
		}
	}
	tx.Close()
	if toolErr != nil {
		b.r.noteToolError(call.ID, toolErr)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.slots[i].res = defs.ToolResult{CallID: call.ID, Name: call.Name, Arguments: call.Arguments, Content: content, IsError: isError}
	b.slots[i].finished = true
	b.advance()
	return nil
}

// execute hands the calls without a result to x.
func (b *callBatch) execute(x ToolExecutor) error {
	c := &ToolCalls{b: b}
	for i, s := range b.slots {
		if s.tx != nil {
			c.pending = append(c.pending, i)
		}
	}
	err := x.ExecuteTools(b.ctx, c)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err == nil {
		for _, i := range c.pending {
			if !b.slots[i].finished {
				err = fmt.Errorf("the ToolExecutor returned without a result for call %q (%s)", b.reply.ToolCalls[i].ID, b.reply.ToolCalls[i].Name)
				break
			}
		}
	}
	if err != nil {
		for _, s := range b.slots[b.committed:] {
			if s.tx != nil {
				s.tx.Discard()
			}
		}
		return &StepError{Step: b.r.step, Op: OpTools, Err: err}
	}
	return nil
}

// ToolRun is one tool call to run away from its run, with RunTool.
type ToolRun struct {
	// Input is the input of the prompt that declared the tool
	// (ToolCalls.Input).
	Input string
	// Agent is the name of the sub-agent whose reply made the call
	// (ToolCalls.Agent); "" for a top run.
	Agent string
	// Step is the number of the step the call belongs to.
	Step int
	// State is the prompt's state as the step's calls started
	// (ToolCalls.State); empty means no state.
	State json.RawMessage
	// Offered names the tools the step's request offered
	// (ToolCalls.Offered).
	Offered []string
	// Call is the call to run.
	Call defs.ToolCall
}

// ToolOutcome is what a tool call run by RunTool returned.
type ToolOutcome struct {
	// Content and IsError are the result for the model.
	Content string
	IsError bool
	// Changes are the state keys the call set, with their new values as
	// JSON; nil when it set none.
	Changes map[string]json.RawMessage
	// Err is the Go error behind an error result of a tool that failed when
	// it ran (see Step.ToolErrors); nil otherwise.
	Err error
}

// RunTool runs one tool call away from the run it belongs to, as that run
// would have run it: it executes fn as step in.Step of a prompt with input
// in.Input and state in.State, looks up the tool the call names among the
// definitions of that execution, and calls it (unknown, disabled tools and
// invalid arguments get the usual error results, a panic is recovered,
// cfg.ToolTimeout applies). A sub-agent the tool starts runs here, against
// model, to completion. The state changes the tool makes are returned, not
// applied anywhere: the caller hands them to ToolCalls.Finish.
//
// The tool is the one the prompt function declares for that step and
// state, with the values that execution captured; so fn must be the
// function the run executes, and be a function of its state (as the
// runtime asks of every prompt function), for the tool to be the same.
// The error is the prompt function's own (*prompt.Error), or a state that
// does not decode.
func RunTool(ctx context.Context, model llm.Model, fn prompt.Func, cfg Config, in ToolRun) (*ToolOutcome, error) {
	cfg.Store, cfg.SessionID, cfg.ToolExecutor = nil, "", nil
	r := New(model, fn, cfg)
	r.agent = in.Agent
	r.p = prompt.New(in.Input)
	store := r.p.Store()
	if len(in.State) > 0 {
		if err := store.UnmarshalJSON(in.State); err != nil {
			return nil, err
		}
	}
	r.c().Registry().BeginStep()
	if _, err := r.execute(ctx, in.Step); err != nil {
		return nil, err
	}
	defer r.Close()
	offered := make([]llm.ToolSpec, len(in.Offered))
	for i, name := range in.Offered {
		offered[i] = llm.ToolSpec{Name: name}
	}
	tx := store.Begin()
	res := r.runTool(ctx, in.Call, offered, tx) // it gives the call the runner
	tx.Close()
	out := &ToolOutcome{Content: res.Content, IsError: res.IsError, Err: r.takeToolErrors()[in.Call.ID]}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	changes, err := store.Changes(in.State)
	if err != nil {
		return nil, err
	}
	out.Changes = changes
	return out, nil
}

// NewAgent returns a runner for fn as the sub-agent name with task, as
// RunAgent starts one inside a tool call: task is its first message and
// its prompt's Input, and its requests carry Agent name. It is how a
// sub-agent runs somewhere else than inside its tool call (the Temporal
// integration runs it as a child workflow). cfg is used as given.
func NewAgent(model llm.Model, fn prompt.Func, cfg Config, name, task string) *Runner {
	sub := New(model, fn, cfg)
	sub.agent = name
	sub.p = prompt.New(task)
	sub.transcript = []defs.Message{defs.UserMessage(task)}
	sub.c().MarkMessagesSeen([]string{core.MessageID(defs.RoleUser, task)})
	return sub
}

// now reads Config.Now, or the wall clock.
func (r *Runner) now() time.Time {
	if r.cfg.Now != nil {
		return r.cfg.Now()
	}
	return time.Now()
}
