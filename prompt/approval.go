package prompt

import (
	"encoding/json"
	"fmt"
	"reflect"
)

// NeedsApproval declares that every call of the tool waits for a person's
// decision before it runs. The run pauses after the model's reply, with
// the call in runtime.Result.Awaiting (and in the session's checkpoint);
// runtime.Runner.Approve lets the call run when the run continues, and
// runtime.Runner.Deny gives the model the reason as the call's result
// instead. Other calls of the same reply run at once.
//
// The declaration is the unit, as for any definition: a tool declared with
// NeedsApproval at one step and without it at the next needs approval only
// for the calls of the first. A disabled tool, an unknown tool and invalid
// arguments get their error result without asking anyone.
func NeedsApproval() ToolOption {
	return toolOptionFunc(func(o *toolOptions) { o.approval, o.approvalType = always, nil })
}

func always(json.RawMessage) (bool, error) { return true, nil }

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// NeedsApprovalIf declares that a call of the tool waits for a person's
// decision (see NeedsApproval) when need returns true for its arguments:
//
//	prompt.DefTool(p, "transfer", "Send money.", transfer,
//		prompt.NeedsApprovalIf(func(a transferArgs) bool { return a.Amount > 100 }))
//
// A is the tool's argument type (DefTool's A), or json.RawMessage for the
// arguments as the model sent them; for DefSchemaTool, any type the
// arguments decode into. need runs on the runner's goroutine after the
// arguments were validated and before any call of the reply runs; it must
// not block. Arguments that do not decode into A and a panic in need are
// an error result for the model, and the tool does not run. DefTool panics
// with a *MisuseError when A is neither its argument type nor
// json.RawMessage.
func NeedsApprovalIf[A any](need func(args A) bool) ToolOption {
	t := reflect.TypeFor[A]()
	decide := func(raw json.RawMessage) (bool, error) {
		var a A
		if err := json.Unmarshal(orEmpty(raw), &a); err != nil {
			return false, fmt.Errorf("arguments do not decode into %s: %w", t, err)
		}
		return need(a), nil
	}
	if t == rawMessageType {
		decide = func(raw json.RawMessage) (bool, error) {
			return need(any(orEmpty(raw)).(A)), nil
		}
	}
	return toolOptionFunc(func(o *toolOptions) { o.approval, o.approvalType = decide, t })
}

// ApprovalTypeError is a tool declared by DefTool with NeedsApprovalIf
// whose function takes another type than the tool's arguments.
type ApprovalTypeError struct {
	Args   reflect.Type // the tool's argument type
	Option reflect.Type // the type NeedsApprovalIf's function takes
}

func (e *ApprovalTypeError) Error() string {
	return fmt.Sprintf("NeedsApprovalIf takes a func(%s) bool, but the tool's arguments are %s (use func(%s) bool, or func(json.RawMessage) bool)",
		e.Option, e.Args, e.Args)
}

// checkApprovalType returns an *ApprovalTypeError when opts hold a
// NeedsApprovalIf whose function takes neither args nor json.RawMessage.
func checkApprovalType(opts []ToolOption, args reflect.Type) error {
	if len(opts) == 0 {
		return nil
	}
	o := toolOpts(opts)
	if o.approvalType == nil || o.approvalType == args || o.approvalType == rawMessageType {
		return nil
	}
	return &ApprovalTypeError{Args: args, Option: o.approvalType}
}

// toolOpts applies opts. The options escape to the heap only when there
// are some: a prompt declares its tools at every step.
func toolOpts(opts []ToolOption) toolOptions {
	if len(opts) == 0 {
		return toolOptions{}
	}
	o := new(toolOptions)
	for _, opt := range opts {
		opt.apply(o)
	}
	return *o
}
