package callsite

import (
	"sync"
	"sync/atomic"
)

// G returns an identity of the calling goroutine: two goroutines alive at
// the same time have different identities, and a goroutine keeps its own
// while it lives, however its stack grows. It is 0 where it cannot be
// read (architectures without the frame walks, builds with -tags purego,
// or a failed check at first use); the caller must then tell goroutines
// apart another way. A call costs a few nanoseconds.
func G() uintptr {
	if !haveWalk {
		return 0
	}
	gOnce.Do(checkG)
	if !gOK.Load() {
		return 0
	}
	return getg()
}

var (
	gOnce sync.Once
	gOK   atomic.Bool
)

// checkG turns G on if getg behaves as G promises on this process: the
// same value on one goroutine before and after its stack grows and moves,
// and different values on two goroutines alive at once.
func checkG() {
	type result struct{ before, after, other uintptr }
	done := make(chan result)
	go func() {
		before := getg()
		after := growStack(64, getg)
		other := make(chan uintptr)
		go func() { other <- getg() }()
		done <- result{before, after, <-other}
	}()
	r := <-done
	gOK.Store(r.before != 0 && r.before == r.after && r.other != 0 && r.other != r.before)
}

// growStack calls f under depth frames of 1 KiB each, which makes a new
// goroutine's stack grow, and so move, several times.
//
//go:noinline
func growStack(depth int, f func() uintptr) uintptr {
	var pad [1024]byte
	if depth == 0 {
		return f()
	}
	pad[depth%len(pad)] = byte(depth)
	return growStack(depth-1, f) + uintptr(pad[0]) - uintptr(pad[0])
}
