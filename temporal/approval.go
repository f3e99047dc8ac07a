package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
)

// UpdateDecide is the update that answers a tool call awaiting a person's
// decision (a tool declared with prompt.NeedsApproval): argument Decision,
// no result. Its validator rejects a call id that does not await a
// decision before the update is written to the workflow's history; the
// rejection is an application error of type ApprovalErrorType (Decide
// turns it back into a *runtime.ApprovalError).
const UpdateDecide = "reprompt.decide"

// ApprovalErrorType is the type of the application error of a decision
// that the workflow refused: its details hold the *runtime.ApprovalError.
const ApprovalErrorType = "ApprovalError"

// Decision is the argument of UpdateDecide: approve the call CallID, or
// deny it with Reason, the error result the model gets (a default text when
// empty). In a StepRecord, the decisions that completed a paused step.
type Decision struct {
	CallID  string `json:"call_id"`
	Approve bool   `json:"approve"`
	Reason  string `json:"reason,omitempty"`
}

// Approval is a tool call awaiting a decision, as Status reports it.
type Approval struct {
	// Step is the number of the paused step.
	Step int `json:"step"`
	// CallID is the id to pass to Decide.
	CallID string `json:"call_id"`
	// Tool is the tool called, Arguments its arguments as the model sent
	// them.
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// Decide approves (approve true) or denies the tool call callID that the
// agent workflowID awaits a decision on, and returns once the workflow has
// recorded the decision. The run goes on once every call of the paused
// step is decided: approved calls run as activities, denied ones get
// reason as their error result. A call that does not await a decision is
// refused without touching the workflow: the error is a
// *runtime.ApprovalError matching runtime.ErrUnknownCall or
// runtime.ErrAlreadyDecided.
func Decide(ctx context.Context, c client.Client, workflowID, callID string, approve bool, reason string) error {
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   workflowID,
		UpdateName:   UpdateDecide,
		Args:         []any{Decision{CallID: callID, Approve: approve, Reason: reason}},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, nil)
	}
	if err == nil {
		return nil
	}
	if ae := approvalErrorOf(err); ae != nil {
		return ae
	}
	return err
}

// approvalDetails is a *runtime.ApprovalError as the details of an
// application error.
type approvalDetails struct {
	Op       string           `json:"op"`
	CallID   string           `json:"call_id"`
	Decided  session.Decision `json:"decided,omitempty"`
	Awaiting []string         `json:"awaiting,omitempty"`
	Err      string           `json:"err"` // "unknown", "decided" or "done"
}

var approvalErrs = map[string]error{"unknown": runtime.ErrUnknownCall, "decided": runtime.ErrAlreadyDecided, "done": runtime.ErrDone}

// approvalFailure turns a *runtime.ApprovalError into the application
// error an update fails with; other errors are returned as they are.
func approvalFailure(err error) error {
	ae, ok := errors.AsType[*runtime.ApprovalError](err)
	if !ok {
		return err
	}
	d := approvalDetails{Op: ae.Op, CallID: ae.CallID, Decided: ae.Decided, Awaiting: ae.Awaiting}
	for name, e := range approvalErrs {
		if errors.Is(ae.Err, e) {
			d.Err = name
		}
	}
	return temporal.NewApplicationErrorWithOptions(ae.Error(), ApprovalErrorType, temporal.ApplicationErrorOptions{NonRetryable: true, Details: []any{d}})
}

// approvalErrorOf returns the *runtime.ApprovalError that err, an update's
// failure, carries; nil when it carries none.
func approvalErrorOf(err error) *runtime.ApprovalError {
	ae, ok := errors.AsType[*temporal.ApplicationError](err)
	if !ok || ae.Type() != ApprovalErrorType || !ae.HasDetails() {
		return nil
	}
	var d approvalDetails
	if ae.Details(&d) != nil || approvalErrs[d.Err] == nil {
		return nil
	}
	return &runtime.ApprovalError{Op: d.Op, CallID: d.CallID, Decided: d.Decided, Awaiting: d.Awaiting, Err: approvalErrs[d.Err]}
}

// check returns the *runtime.ApprovalError Approve or Deny would return
// for d, without deciding anything: the update's validator.
func (w *agentRun) check(d Decision) error {
	fail := &runtime.ApprovalError{Op: "deny", CallID: d.CallID, Err: runtime.ErrUnknownCall}
	if d.Approve {
		fail.Op = "approve"
	}
	awaiting := w.awaiting()
	for _, a := range awaiting {
		if a.CallID == d.CallID {
			return nil
		}
		fail.Awaiting = append(fail.Awaiting, a.CallID)
	}
	if cp := w.store.cp; cp != nil && cp.Pending != nil && !w.stepping {
		i := slices.IndexFunc(cp.Pending.Approvals, func(a session.Approval) bool { return a.CallID == d.CallID })
		if i >= 0 && cp.Pending.Approvals[i].Decision != session.Awaiting {
			fail.Err, fail.Decided = runtime.ErrAlreadyDecided, cp.Pending.Approvals[i].Decision
		}
	}
	return approvalFailure(fail)
}

// decide is the update handler: it records d with the runner, which
// checkpoints it into the workflow's store (carried by continue-as-new).
func (w *agentRun) decide(d Decision) error {
	if err := w.check(d); err != nil {
		return err
	}
	var err error
	if d.Approve {
		err = w.runner.Approve(d.CallID)
	} else {
		err = w.runner.Deny(d.CallID, d.Reason)
	}
	return approvalFailure(err)
}

// awaiting returns the calls the paused run awaits a decision on; none
// while a step runs.
func (w *agentRun) awaiting() []Approval {
	if w.runner == nil || w.stepping {
		return nil
	}
	var out []Approval
	for _, a := range w.runner.Awaiting() {
		out = append(out, Approval{Step: a.Step, CallID: a.CallID, Tool: a.Tool, Arguments: a.Arguments})
	}
	return out
}

// paused reports whether calls await a decision.
func (w *agentRun) paused() bool { return len(w.awaiting()) > 0 }

// setUpdateHandler registers the handler of UpdateDecide.
func (w *agentRun) setUpdateHandler() error {
	return workflow.SetUpdateHandlerWithOptions(w.ctx, UpdateDecide,
		func(_ workflow.Context, d Decision) error { return w.decide(d) },
		workflow.UpdateHandlerOptions{Validator: func(_ workflow.Context, d Decision) error { return w.check(d) }})
}
