package prompt

import (
	"reflect"
	"unsafe"

	"github.com/reprompt/reprompt/defs"
)

// A prompt declares its tools at every execution. A tool declared with the
// same function value as at the last execution (a function declared at
// package level, a closure made once and kept, a closure that captures
// nothing), and the same name, description, schema and options, is the
// same tool: its *defs.Tool, which is never modified once declared, is
// declared again instead of a new one and a new wrapper of the function.
// A closure made anew at every execution (one that captures a state value)
// is a new function value, and makes a new tool.

// toolEntry is what a prompt keeps of a tool name: which execution
// declared it last and from where (for the duplicate check), and the tool
// DefTool or DefSchemaTool made for it (for reuse; zero after DefAgent,
// whose tool is made anew at every execution). One map lookup per
// declaration finds both.
type toolEntry struct {
	exec int     // the execution that declared the name last (Prompt.execs)
	pc   uintptr // where it did (callsite.CallerPC)
	last lastTool
}

// lastTool is a tool as the last execution declared it, with the identity
// of the function it wraps.
type lastTool struct {
	tool *defs.Tool
	ts   *toolSchema
	typ  reflect.Type // DefTool's argument type, which ts was made for; nil for DefSchemaTool
	fn   unsafe.Pointer
}

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
func (last *lastTool) same(description string, ts *toolSchema, o toolOptions, fn unsafe.Pointer) *defs.Tool {
	t := last.tool
	if t == nil || last.fn != fn || last.ts != ts {
		return nil
	}
	if t.Description != description || t.Idempotent != o.idempotent || funcID(t.NeedsApproval) != funcID(o.approval) {
		return nil
	}
	return t
}

// forgetUndeclaredTools drops the tools the execution that just ended did
// not declare, so that their functions, and what those capture, are not
// kept alive.
func (p *Prompt) forgetUndeclaredTools() {
	if len(p.tools) <= p.toolsDeclared {
		return // all of them were declared
	}
	for name, e := range p.tools {
		if e.exec != p.execs {
			delete(p.tools, name)
		}
	}
}
