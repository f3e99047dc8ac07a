package prompt

import (
	"reflect"
	"runtime"
	"sync/atomic"

	"github.com/reprompt/reprompt/internal/callsite"
)

// A hook must be called on the goroutine that executes the prompt
// function. p.executing alone cannot tell: another goroutine (one a tool
// or an effect started, still running at the next execution) reads it
// true while an execution is under way. So a hook also looks for the
// frame of callFn, which execute calls the prompt function through, on
// its own stack: a walk of a few frame pointers (see callsite.OnStack).

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
// executing a prompt function. When the frame walk cannot tell (an
// architecture without it), it reports true: the check is then p.executing
// alone, as the walk by runtime.Callers would cost a hook more than the
// hook itself.
func onExecution() bool {
	if pc := callFnPC.Load(); pc != 0 {
		found, known := callsite.OnStack(pc)
		return found || !known
	}
	var pcs [64]uintptr
	for skip := 2; ; skip += len(pcs) {
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
