package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/internal/callsite"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/session"
)

// Errors of tool approval. Test them with errors.Is.
var (
	// ErrAwaitingApproval: Next was called while tool calls of the paused
	// step still await a decision.
	ErrAwaitingApproval = errors.New("tool calls await a decision")
	// ErrUnknownCall: Approve or Deny named a call that does not await a
	// decision (no such call, or the run is not paused).
	ErrUnknownCall = errors.New("no tool call with this id awaits a decision")
	// ErrAlreadyDecided: Approve or Deny named a call that was already
	// approved or denied.
	ErrAlreadyDecided = errors.New("the tool call was already decided")
)

// PendingApproval is a tool call that waits for a person's decision before
// it runs (see prompt.NeedsApproval).
type PendingApproval struct {
	// Step is the number of the paused step.
	Step int
	// CallID is the id to pass to Runner.Approve or Runner.Deny.
	CallID string
	// Tool is the tool called, and Arguments its arguments, validated
	// against its schema, as the model sent them.
	Tool      string
	Arguments json.RawMessage
	// Question is, for a call that asked the user (prompt.Ask), the
	// question, and Schema the JSON Schema of the answer it takes: answer
	// it with Runner.Answer. Empty for a call that needs approval.
	Question string
	Schema   json.RawMessage
}

// Decision is the decision on a call that needed approval, as recorded by
// the step that completed it (Step.Decisions).
type Decision struct {
	CallID   string
	Tool     string
	Approved bool
	// Reason is, for a denied call, what the model got as its result: the
	// reason given to Deny, or a default text when it was empty.
	Reason string
	// Asked are, for a call that asked the user (prompt.Ask), its
	// questions with their answers, in order (Approved: it ran again).
	Asked []session.Ask
}

// ApprovalError is a decision that Runner.Approve or Runner.Deny refused.
// It matches (errors.Is) its Err: ErrUnknownCall, ErrAlreadyDecided or
// ErrDone.
type ApprovalError struct {
	Op     string // "approve" or "deny"
	CallID string
	// Decided is, for ErrAlreadyDecided, the decision made before.
	Decided session.Decision
	// Awaiting are the ids of the calls that await a decision.
	Awaiting []string
	Err      error
}

func (e *ApprovalError) Error() string {
	s := fmt.Sprintf("%s %q: %v", e.Op, e.CallID, e.Err)
	if e.Decided != session.Awaiting {
		s += fmt.Sprintf(" (%s)", e.Decided)
	}
	switch {
	case len(e.Awaiting) > 0:
		s += " (awaiting a decision: " + strings.Join(e.Awaiting, ", ") + ")"
	case errors.Is(e.Err, ErrUnknownCall):
		s += " (no call awaits a decision)"
	}
	return s
}

// Unwrap returns Err.
func (e *ApprovalError) Unwrap() error { return e.Err }

// Approve lets the call callID of the paused step run: it runs when the run
// continues (Next or Run), once every call of the step is decided. Deny
// gives the model reason as the call's result instead (an error result;
// an empty reason gives a default text), and the tool does not run.
//
// With a store, the decision is checkpointed before Approve returns, so it
// survives a crash: a run resumed from the checkpoint runs an approved call
// at most once (an approved call cut short by a crash gets an
// "interrupted" result, or runs again if its tool is idempotent). The save
// is not cancelled by any context, as the runtime's other saves; when it
// fails, the decision is not recorded and the error is a *StepError.
//
// Approve and Deny record a decision and return: they run no tool, start no
// goroutine and wait for nothing. A call id that does not await a decision
// is an *ApprovalError matching ErrUnknownCall, a call already decided one
// matching ErrAlreadyDecided, and a closed runner one matching ErrDone.
// Like every method of Runner, they must not be called concurrently with
// another.
func (r *Runner) Approve(callID string) error {
	return r.decide("approve", callID, session.Approved, "")
}

// Deny refuses the call callID of the paused step; see Approve.
func (r *Runner) Deny(callID, reason string) error {
	return r.decide("deny", callID, session.Denied, reason)
}

// Awaiting returns the calls of the paused step that await a decision, in
// call order, or nil when the run is not paused. After Resume, it lists
// the calls the checkpoint's step paused for.
func (r *Runner) Awaiting() []PendingApproval {
	if !r.paused() {
		return nil
	}
	var out []PendingApproval
	for _, a := range r.approvals {
		if a.Decision != session.Awaiting {
			continue
		}
		c, _ := r.pendingCall(a.CallID)
		pa := PendingApproval{Step: r.step, CallID: c.ID, Tool: c.Name, Arguments: c.Arguments}
		if hasQuestion(a) {
			q := a.Asks[len(a.Asks)-1]
			pa.Question, pa.Schema = q.Question, q.Schema
		}
		out = append(out, pa)
	}
	return out
}

// paused reports whether calls of the step under way await a decision.
func (r *Runner) paused() bool {
	if r.approvals == nil || r.pending == nil {
		return false
	}
	for _, a := range r.approvals {
		if a.Decision == session.Awaiting {
			return true
		}
	}
	return false
}

func (r *Runner) awaitingIDs() []string {
	if !r.paused() {
		return nil
	}
	var ids []string
	for _, a := range r.approvals {
		if a.Decision == session.Awaiting {
			ids = append(ids, a.CallID)
		}
	}
	return ids
}

func (r *Runner) awaitingError() error {
	return fmt.Errorf("step %d: %w: %s (decide each with Approve or Deny, or answer its question with Answer)", r.step, ErrAwaitingApproval, strings.Join(r.awaitingIDs(), ", "))
}

// pendingCall returns the call id of the pending reply.
func (r *Runner) pendingCall(id string) (defs.ToolCall, bool) {
	if r.pending == nil {
		return defs.ToolCall{}, false
	}
	for _, c := range r.pending.Reply.ToolCalls {
		if c.ID == id {
			return c, true
		}
	}
	return defs.ToolCall{}, false
}

func (r *Runner) decide(op, callID string, d session.Decision, reason string) error {
	fail := func(err error, decided session.Decision) error {
		return &ApprovalError{Op: op, CallID: callID, Decided: decided, Awaiting: r.awaitingIDs(), Err: err}
	}
	if r.closed || r.err != nil {
		return fail(ErrDone, session.Awaiting)
	}
	i := slices.IndexFunc(r.approvals, func(a session.Approval) bool { return a.CallID == callID })
	if r.pending == nil || i < 0 {
		return fail(ErrUnknownCall, session.Awaiting)
	}
	if prev := r.approvals[i].Decision; prev != session.Awaiting {
		return fail(ErrAlreadyDecided, prev)
	}
	if d == session.Approved && hasQuestion(r.approvals[i]) {
		return fail(ErrAwaitingAnswer, session.Awaiting)
	}
	results := r.pending.Results
	r.approvals[i].Decision = d
	if d == session.Denied {
		c, _ := r.pendingCall(callID)
		r.pending.Results = append(slices.Clip(results), denial(c, reason))
	}
	if err := r.savePending(context.Background(), r.pending.Reply, r.pending.Results); err != nil {
		r.approvals[i].Decision, r.pending.Results = session.Awaiting, results
		return &StepError{Step: r.step, Op: OpCheckpoint, Err: err}
	}
	return nil
}

// denial is the result a denied call gets.
func denial(c defs.ToolCall, reason string) defs.ToolResult {
	if reason == "" {
		reason = fmt.Sprintf("the call of %q was denied by a person and did not run", c.Name)
	}
	return defs.ToolResult{CallID: c.ID, Name: c.Name, Arguments: c.Arguments, Content: reason, IsError: true}
}

// classify finds the calls of reply that need approval, and records them
// in r.approvals (nil when none does). Calls of tools that are unknown,
// not offered, or with invalid arguments are left to runTool, which
// refuses them. A decision that fails (an error, a panic) is the call's
// result, in given.
func (r *Runner) classify(reply defs.Message, offered []llm.ToolSpec) (given map[string]defs.ToolResult, held map[string]bool) {
	r.approvals = nil
	if len(reply.ToolCalls) == 0 {
		return nil, nil
	}
	reg := r.c().Registry()
	for _, c := range reply.ToolCalls {
		def, ok := reg.Lookup(defs.KindTool, c.Name)
		if !ok || def.Tool.NeedsApproval == nil || !slices.ContainsFunc(offered, func(t llm.ToolSpec) bool { return t.Name == c.Name }) {
			continue
		}
		if def.Tool.Validate != nil {
			if def.Tool.Validate(c.Arguments) != nil {
				continue
			}
		} else if len(c.Arguments) > 0 && !json.Valid(c.Arguments) {
			continue
		}
		need, err := needsApproval(def.Tool, c.Arguments)
		if err != nil {
			r.noteToolError(c.ID, err)
			if given == nil {
				given = make(map[string]defs.ToolResult)
			}
			given[c.ID] = defs.ToolResult{CallID: c.ID, Name: c.Name, Arguments: c.Arguments, IsError: true,
				Content: fmt.Sprintf("error: tool %q did not run: deciding whether the call needs approval failed: %s", c.Name, modelText(err))}
			continue
		}
		if need {
			if held == nil {
				held = make(map[string]bool)
			}
			held[c.ID] = true
			r.approvals = append(r.approvals, session.Approval{CallID: c.ID})
		}
	}
	return given, held
}

// ApprovalDecisionError is a tool's approval function
// (prompt.NeedsApprovalIf) that failed: the call did not run, and the model
// got an error result. Step.ToolErrors holds it by call id.
type ApprovalDecisionError struct {
	Tool string
	Err  error // a *ToolPanicError when it panicked
}

func (e *ApprovalDecisionError) Error() string {
	return fmt.Sprintf("tool %q: deciding whether the call needs approval: %v", e.Tool, e.Err)
}

// Unwrap returns Err.
func (e *ApprovalDecisionError) Unwrap() error { return e.Err }

// modelText is the text of a failed decision for the model: without the Go
// source location of a panic.
func modelText(err error) string {
	if pe, ok := errors.AsType[*ToolPanicError](err); ok {
		return fmt.Sprintf("panic: %v", pe.Value)
	}
	if de, ok := errors.AsType[*ApprovalDecisionError](err); ok {
		return de.Err.Error()
	}
	return err.Error()
}

// needsApproval runs the tool's approval function, turning a panic into an
// *ApprovalDecisionError wrapping a *ToolPanicError.
func needsApproval(t *defs.Tool, args json.RawMessage) (need bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &ApprovalDecisionError{Tool: t.Name, Err: &ToolPanicError{Tool: t.Name, Site: callsite.Panic().String(), Value: v}}
		}
	}()
	need, err = t.NeedsApproval(args)
	if err != nil {
		err = &ApprovalDecisionError{Tool: t.Name, Err: err}
	}
	return need, err
}

// pause ends a step whose reply has calls that need approval: the other
// calls run (their results and state changes are kept, in call order), the
// step is checkpointed as pending with its approvals, and its record lists
// the calls awaiting a decision.
func (r *Runner) pause(ctx context.Context, rec *Step, offered []llm.ToolSpec, given map[string]defs.ToolResult, held map[string]bool) (*Step, error) {
	reply := rec.Reply.Message
	results, err := r.runCalls(ctx, reply, offered, given, held)
	rec.Agents = r.takeAgentRuns(reply.ToolCalls)
	rec.ToolErrors = r.takeToolErrors()
	if err != nil {
		return rec, err
	}
	var done []defs.ToolResult
	for i, c := range reply.ToolCalls {
		if held[c.ID] {
			rec.Awaiting = append(rec.Awaiting, PendingApproval{Step: rec.Number, CallID: c.ID, Tool: c.Name, Arguments: c.Arguments})
			continue
		}
		done = append(done, results[i])
	}
	rec.ToolResults = done
	r.pending = &session.Pending{Reply: reply, Results: done, Offered: r.offered}
	rec.State = r.stateSnapshot()
	r.recorder.pause(rec) // kept by the checkpoints until the step completes
	if err := r.savePending(ctx, reply, done); err != nil {
		return rec, &StepError{Step: rec.Number, Op: OpCheckpoint, Err: err}
	}
	return rec, nil
}

// decisions returns the decisions recorded on the approvals of p, in call
// order, with the reasons of the denials found in results.
func decisions(p *session.Pending, approvals []session.Approval, results map[string]defs.ToolResult) []Decision {
	var out []Decision
	for _, a := range approvals {
		d := Decision{CallID: a.CallID, Approved: a.Decision == session.Approved || a.Decision == session.Answered, Asked: a.Asks}
		for _, c := range p.Reply.ToolCalls {
			if c.ID == a.CallID {
				d.Tool = c.Name
			}
		}
		if !d.Approved {
			d.Reason = results[a.CallID].Content
		}
		out = append(out, d)
	}
	return out
}

// SubAgentApprovalError is a sub-agent whose model called a tool that
// needs approval: a sub-agent runs inside one tool call of its parent and
// cannot pause, so it fails, and the parent's call gets an error result.
// Declare such tools in the top-level prompt.
type SubAgentApprovalError struct {
	Agent string
	Call  PendingApproval
}

func (e *SubAgentApprovalError) Error() string {
	if e.Call.Question != "" {
		return fmt.Sprintf("call %s of tool %q asks the user %q, which sub-agent %q cannot wait for (ask from a tool of the top-level prompt)", e.Call.CallID, e.Call.Tool, e.Call.Question, e.Agent)
	}
	return fmt.Sprintf("call %s of tool %q needs approval, which sub-agent %q cannot wait for (declare the tool in the top-level prompt)", e.Call.CallID, e.Call.Tool, e.Agent)
}
