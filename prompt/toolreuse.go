package prompt

import (
	"unsafe"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/internal/core"
)

// A prompt declares its tools at every execution. A tool declared with the
// same function value as at the last execution (a function declared at
// package level, a closure made once and kept, a closure that captures
// nothing), and the same name, description, schema and options, is the
// same tool: its *defs.Tool, which is never modified once declared, is
// declared again instead of a new one and a new wrapper of the function.
// A closure made anew at every execution (one that captures a state value)
// is a new function value, and makes a new tool.

// funcID returns the identity of the function value f: the closure object
// it refers to, which holds its code and its captured variables. Two
// function values with the same identity are the same function. The
// closure of a tool kept in a toolEntry stays alive, so a new closure
// cannot take its address while its identity is compared.
func funcID[F any](f F) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(&f))
}

// same returns the tool the last execution declared under the entry's
// name if it is the one these arguments would make, or nil.
func same(last *core.LastTool, description string, ts *toolSchema, o toolOptions, fn unsafe.Pointer) *defs.Tool {
	t := last.Tool
	if t == nil || last.Fn != fn || last.Schema != ts {
		return nil
	}
	if t.Description != description || t.Idempotent != o.idempotent || funcID(t.NeedsApproval) != funcID(o.approval) {
		return nil
	}
	return t
}
