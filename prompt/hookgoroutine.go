package prompt

import (
	"reflect"
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/reprompt/reprompt/internal/callsite"
)

// A hook must be called on the goroutine that executes the prompt
// function. p.executing alone cannot tell: another goroutine (one a tool
// or an effect started, still running at the next execution) reads it
// true while an execution is under way. So a hook compares the identity
// of its goroutine (callsite.G) with that of the goroutine executing the
// prompt function. Where goroutines have no identity (callsite.G is 0), it
// looks for the frame of callFn, which execute calls the prompt function
// through, on its own stack: a walk of a few frame pointers (see
// callsite.OnStack), or nothing where there is no walk either.

// callFn calls fn(p): its frame on the stack is how a hook knows it runs
// on the goroutine of an execution. It must not be inlined.
//
//go:noinline
func callFn(fn Func, p *Prompt) error {
	return fn(p)
}

// callFnPC is the return address of the call of fn in callFn, learnt the
// first time a hook finds that frame by its function (see onExecution).
var callFnPC atomic.Uintptr

var callFnEntry = runtime.FuncForPC(reflect.ValueOf(callFn).Pointer()).Entry()

// onExecution reports whether the calling goroutine is inside callFn,
// executing a prompt function, by a frame walk (callsite.OnStack) where
// there is one, else by runtime.Callers, which costs a hook a few hundred
// nanoseconds: only where callsite.G is 0 too (see Prompt.check).
func onExecution() bool {
	pc := callFnPC.Load()
	if pc == 0 {
		return learnCallFn()
	}
	if found, known := callsite.OnStack(pc); known {
		return found
	}
	// A hook is usually called by the prompt function itself, a few
	// frames below callFn: look there first, then further up.
	var pcs [32]uintptr
	for skip, size := 2, 6; ; skip, size = skip+size, len(pcs) {
		n := runtime.Callers(skip, pcs[:size])
		if slices.Contains(pcs[:n], pc) {
			return true
		}
		if n < size {
			return false
		}
	}
}

// learnCallFn looks for callFn's frame on the calling goroutine's stack by
// its function, and if found, keeps its return address in callFnPC.
func learnCallFn() bool {
	var pcs [64]uintptr
	for skip := 3; ; skip += len(pcs) {
		n := runtime.Callers(skip, pcs[:])
		for _, pc := range pcs[:n] {
			if f := runtime.FuncForPC(pc - 1); f != nil && f.Entry() == callFnEntry {
				callFnPC.Store(pc)
				return true
			}
		}
		if n < len(pcs) {
			return false
		}
	}
}
