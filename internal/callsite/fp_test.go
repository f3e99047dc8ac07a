package callsite

import (
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFrameWalkIsOnWhereItExists checks that the check at first use accepts
// the frame walk on the architectures that have it: a wrong walk would turn
// it off silently and only cost time.
func TestFrameWalkIsOnWhereItExists(t *testing.T) {
	assert.Equal(t, haveWalk, fast())
	if haveWalk {
		f := runtime.FuncForPC(goexitPC - 1)
		require.NotNil(t, f)
		assert.Equal(t, "runtime.goexit", f.Name())
	}
}

// TestWalkReadsTheFramesCallersReads compares the walk with runtime.Callers
// on a stack of frames that are not inlined, whatever its depth.
func TestWalkReadsTheFramesCallersReads(t *testing.T) {
	if !haveWalk {
		var pcs [4]uintptr
		n, status := walk(pcs[:])
		assert.Equal(t, 0, n)
		assert.Equal(t, statusBad, status, "no frame walk on "+runtime.GOARCH)
		return
	}
	for _, depth := range []int{0, 1, 10, 300} {
		var pcs, ref [64]uintptr
		var n, m, status int
		recurse(depth, func() { n, status, m = both(pcs[:], ref[:]) })
		if n < len(pcs) {
			assert.Equal(t, statusEnd, status, "depth %d", depth)
		} else {
			assert.Equal(t, statusFull, status, "depth %d", depth)
		}
		// The walk also reads the wrapper that starts the test's
		// goroutine, testing.(*T).Run.gowrap1, which runtime.Callers
		// leaves out.
		var walked []uintptr
		for _, pc := range pcs[:n] {
			if f, _ := runtime.CallersFrames([]uintptr{pc}).Next(); !isWrapper(f) {
				walked = append(walked, pc)
			}
		}
		// The closure is called from recurse, which is not inlined; its
		// own frame is the first both read.
		assert.Equal(t, ref[:min(m, len(walked))], walked[:min(m, len(walked))], "depth %d", depth)
		if n < len(pcs) {
			assert.Len(t, walked, m, "depth %d", depth)
		}
	}
}

// both reads its caller's frames twice: with the walk and with
// runtime.Callers.
//
//go:noinline
func both(pcs, ref []uintptr) (n, status, m int) {
	n, status = walk(pcs)
	m = runtime.Callers(2, ref)
	return n, status, m
}

//go:noinline
func recurse(n int, f func()) {
	if n == 0 {
		f()
		return
	}
	recurse(n-1, f)
}

// TestWalkEndsAtTheOutermostFrame checks the end of a goroutine's walk:
// statusEnd, with runtime.goexit's return address last.
func TestWalkEndsAtTheOutermostFrame(t *testing.T) {
	if !haveWalk {
		status, _ := find(1, 10)
		assert.Equal(t, statusBad, status, "no frame walk on "+runtime.GOARCH)
		return
	}
	done := make(chan []uintptr)
	go func() {
		var pcs [64]uintptr
		n, status := walk(pcs[:])
		if status != statusEnd {
			done <- nil
			return
		}
		done <- pcs[:n]
	}()
	pcs := <-done
	require.NotEmpty(t, pcs)
	assert.Equal(t, goexitPC, pcs[len(pcs)-1])
}

// TestOnStack checks that OnStack finds a frame that is on the stack, at any
// depth and after the stack has grown and moved, and no frame that is not.
func TestOnStack(t *testing.T) {
	pc := make(chan uintptr, 1)
	var found, known bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		marker(func() {
			var pcs [1]uintptr
			runtime.Callers(3, pcs[:]) // the frame of marker, returning into this function
			pc <- pcs[0]
			// 20,000 frames make the stack grow, so the frames move.
			recurse(20000, func() { found, known = OnStack(pcs[0]) })
		})
	}()
	<-done
	assert.Equal(t, haveWalk, known)
	assert.Equal(t, haveWalk, found)

	// Outside marker, its return address is on no frame.
	p := <-pc
	done = make(chan struct{})
	go func() {
		defer close(done)
		found, known = OnStack(p)
	}()
	<-done
	assert.Equal(t, haveWalk, known)
	assert.False(t, found)
}

//go:noinline
func marker(f func()) { f() }

// TestCallerStackNamesTheUsersFrames checks CallerStack through helpers,
// inlined and not: the frames above skip, up to three, stopping at the
// boundary; the same place gives the same Stack, another place another.
func TestCallerStackNamesTheUsersFrames(t *testing.T) {
	boundary := func(fn string) bool { return strings.HasSuffix(fn, ".stop") }
	var a, b Stack
	var c [2]Stack
	stop(func() {
		a = hook(boundary)
		b = hook(boundary)
		for i := range 2 {
			c[i] = viaHelper(boundary)
		}
	})
	assert.Regexp(t, `^fp_test\.go:\d+$`, a.String())
	assert.NotEqual(t, a, b, "two places")
	parts := strings.Split(c[0].String(), " ← ")
	require.Len(t, parts, 2, "the helper and its caller, not stop: %s", c[0])
	for _, p := range parts {
		assert.Regexp(t, `^fp_test\.go:\d+$`, p)
	}
	assert.Equal(t, c[0], c[1], "the cached Stack of a known place")
	assert.NotEqual(t, c[0], viaHelperElsewhere(boundary), "the helper called from elsewhere")
}

// hook stands for a hook such as prompt.Effect: it names its caller. It is
// small enough to be inlined, so the walk reads its caller's frame only.
func hook(boundary func(string) bool) Stack { return CallerStack(1, boundary) }

//go:noinline
func viaHelper(boundary func(string) bool) Stack { return hook(boundary) }

// viaHelperElsewhere calls viaHelper from another place.
var viaHelperElsewhere = func(boundary func(string) bool) Stack {
	var s Stack
	stop(func() {
		for range 2 {
			s = viaHelper(boundary)
		}
	})
	return s
}

//go:noinline
func stop(f func()) { f() }

type hooks struct{ boundary func(string) bool }

func (h hooks) hook() Stack { return CallerStack(1, h.boundary) }

// TestCallerStackLeavesWrappersOut checks that a hook called through a
// method value is named by its caller, not by the method value's wrapper.
func TestCallerStackLeavesWrappersOut(t *testing.T) {
	h := hooks{func(fn string) bool { return strings.HasSuffix(fn, ".stop") }}
	f := h.hook
	var s Stack
	stop(func() { s = f() })
	assert.Regexp(t, `^fp_test\.go:\d+$`, s.String())
}

// BenchmarkCallerStack measures a cached CallerStack two frames under a
// boundary, as a hook in a prompt function calls it.
func BenchmarkCallerStack(b *testing.B) {
	boundary := func(fn string) bool { return strings.HasSuffix(fn, ".stop") }
	b.ReportAllocs()
	stop(func() {
		for b.Loop() {
			_ = viaHelper(boundary)
		}
	})
}

// BenchmarkOnStack measures OnStack finding a frame 20 frames up.
func BenchmarkOnStack(b *testing.B) {
	b.ReportAllocs()
	marker(func() {
		var pcs [1]uintptr
		runtime.Callers(3, pcs[:])
		recurse(20, func() {
			for b.Loop() {
				OnStack(pcs[0])
			}
		})
	})
}
