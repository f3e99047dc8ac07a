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
// closure of a tool kept in lastTools stays alive, so a new closure cannot
// take its address while its identity is compared.
func funcID[F any](f F) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(&f))
}

// sameTool returns the tool the last execution declared under name if it
// is the one these arguments would make, or nil.
func (p *Prompt) sameTool(name, description string, ts *toolSchema, o toolOptions, fn unsafe.Pointer) *defs.Tool {
	last, ok := p.lastTools[name]
	return p.sameAsLast(last, ok, description, ts, o, fn)
}

// sameAsLast is sameTool for the entry of lastTools already looked up.
func (p *Prompt) sameAsLast(last lastTool, ok bool, description string, ts *toolSchema, o toolOptions, fn unsafe.Pointer) *defs.Tool {
	if !ok || last.fn != fn || last.ts != ts {
		return nil
	}
	t := last.tool
	if t.Description != description || t.Idempotent != o.idempotent || funcID(t.NeedsApproval) != funcID(o.approval) {
		return nil
	}
	p.toolsKept++
	return t
}

// keepTool records t, declared under name with the function fn, for the
// next execution.
func (p *Prompt) keepTool(name string, t *defs.Tool, ts *toolSchema, typ reflect.Type, fn unsafe.Pointer) {
	if p.lastTools == nil {
		p.lastTools = make(map[string]lastTool)
	}
	p.lastTools[name] = lastTool{tool: t, ts: ts, typ: typ, fn: fn}
	p.toolsKept++
}

// forgetUndeclaredTools drops the tools the execution that just ended did
// not declare, so that their functions, and what those capture, are not
// kept alive.
func (p *Prompt) forgetUndeclaredTools() {
	if len(p.lastTools) <= p.toolsKept {
		return // all of them were declared
	}
	for name := range p.lastTools {
		if _, ok := p.tools[name]; !ok {
			delete(p.lastTools, name)
		}
	}
}
