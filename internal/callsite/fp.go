package callsite

import (
	"runtime"
	"sync"
)

// Walking the stack by frame pointers.
//
// runtime.Callers decodes tables for every frame it walks, which costs
// about 60 ns a frame; a hook that names its call site at every execution
// pays it several times a step. On amd64 and arm64 Go keeps a frame pointer
// in every frame, so the return addresses of the frames can be read by
// following them, as the runtime's execution tracer does: walk and find do
// that in assembly (fp_amd64.s, fp_arm64.s). They read physical frames: a
// function inlined into its caller has no frame of its own, but the return
// address into the caller still names it, and runtime.CallersFrames
// expands it.
//
// A frame called from C may hold any frame pointer. The walks stop at a
// frame pointer that does not point a little above the one before, and
// their callers then use runtime.Callers; a check at first use compares the
// walk with runtime.Callers and turns the walks off if they differ.

// The status of a walk.
const (
	statusFull  = 0 // pcs is full
	statusEnd   = 1 // the outermost frame was reached
	statusBad   = 2 // a frame pointer failed the check, or the limit was reached
	statusFound = 3 // find found its frame
)

var (
	checkOnce sync.Once
	walkOK    bool    // the walks agree with runtime.Callers here
	goexitPC  uintptr // the return address of a goroutine's outermost frame
)

// fast reports whether the frame walks can be used.
func fast() bool {
	if !haveWalk {
		return false
	}
	checkOnce.Do(check)
	return walkOK
}

// check compares the walks with runtime.Callers on a known stack, and
// learns the return address of a goroutine's outermost frame on a new
// goroutine, whose frames are all Go's.
func check() {
	done := make(chan bool)
	go func() {
		var pcs, ref [2]uintptr
		n, m, st := checkOuter(pcs[:], ref[:])
		if n != 2 || m != 2 || pcs != ref || st != statusFound {
			done <- false
			return
		}
		var all [256]uintptr
		n, status := walk(all[:])
		if status != statusEnd || n == 0 {
			done <- false
			return
		}
		last := all[n-1]
		if f := runtime.FuncForPC(last - 1); f == nil || f.Name() != "runtime.goexit" {
			done <- false
			return
		}
		// A return address on no frame is not found, and the walk ends
		// at the outermost frame.
		if st, l := find(1, 1<<20); st != statusEnd || l != last {
			done <- false
			return
		}
		goexitPC = last
		done <- true
	}()
	walkOK = <-done
}

// checkOuter and checkInner make a stack of known frames for check: the
// walk from checkInner must read the frames runtime.Callers reads, and
// find must find checkOuter's return address.
//
//go:noinline
func checkOuter(pcs, ref []uintptr) (int, int, int) { return checkInner(pcs, ref) }

//go:noinline
func checkInner(pcs, ref []uintptr) (int, int, int) {
	n, _ := walk(pcs)
	m := runtime.Callers(2, ref)
	st := statusBad
	if n == 2 {
		st, _ = find(pcs[1], 64)
	}
	return n, m, st
}

// OnStack reports whether a frame on the calling goroutine's stack returns
// to pc. known is false when the frame walk cannot tell (on architectures
// without it, or when a frame pointer failed its check): the caller must
// then use runtime.Callers. Walking a frame costs a nanosecond or two.
func OnStack(pc uintptr) (found, known bool) {
	if !fast() {
		return false, false
	}
	switch st, last := find(pc, 1<<20); st {
	case statusFound:
		return true, true
	case statusEnd:
		return false, last == goexitPC
	}
	return false, false
}
