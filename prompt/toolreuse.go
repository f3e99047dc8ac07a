package prompt

import (
	"encoding/json"
	"reflect"
	"sync/atomic"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/internal/core"
)

// A prompt declares its tools at every execution. A tool declared again
// with the same name, description, schema, options and function type as at
// the last execution is the same tool: its *defs.Tool, which is never
// modified once declared, is declared again instead of a new one and a new
// wrapper of the function. The function values given at this execution (a
// closure made anew, capturing this execution's state, is one) are stored
// in the tool's entry (core.LastTool's Fn and Approval), where its Call and
// NeedsApproval read them when they run: tools run between executions,
// never during one, so a call runs the function of the execution that
// offered the tool.

// same returns the tool the last execution declared under the entry's
// name if it is the one these arguments would make but for its function
// values, or nil.
func same(last *core.LastTool, description string, ts *toolSchema, o toolOptions, fnType reflect.Type) *defs.Tool {
	t := last.Tool
	if t == nil || last.FnType != fnType || last.Schema != ts {
		return nil
	}
	if t.Description != description || t.Idempotent != o.idempotent || (t.NeedsApproval == nil) != (o.approval == nil) {
		return nil
	}
	return t
}

// reuse declares t, the tool same found, again, with fn and the options'
// approval decision as this execution's functions.
func (p *Prompt) reuse(e *core.ToolEntry, t *defs.Tool, fn any, o toolOptions) defs.Handle {
	e.Last.Fn.Store(fn)
	if o.approval != nil {
		e.Last.Approval.Store(o.approval)
	}
	return p.c().Registry().Declare(defs.Def{Kind: defs.KindTool, Name: t.Name, Tool: t})
}

// approvalOf returns the NeedsApproval of a new tool: nil, or a function
// that asks the decision held by approval, which holds o's.
func approvalOf(o toolOptions) (func(json.RawMessage) (bool, error), *atomic.Value) {
	if o.approval == nil {
		return nil, nil
	}
	held := new(atomic.Value)
	held.Store(o.approval)
	return func(raw json.RawMessage) (bool, error) {
		return held.Load().(func(json.RawMessage) (bool, error))(raw)
	}, held
}
