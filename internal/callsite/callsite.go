// Package callsite names places in user code: where a hook was called and
// where a panic happened.
package callsite

import (
	"fmt"
	"maps"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Site is a place in source code. The zero Site is unknown.
type Site struct {
	PC   uintptr
	File string
	Line int
	Func string
}

// String returns "file.go:12", with the file's base name, or "unknown".
func (s Site) String() string {
	if s.File == "" {
		return "unknown"
	}
	return fmt.Sprintf("%s:%d", filepath.Base(s.File), s.Line)
}

// Caller returns the site skip frames above its caller (0 is the function
// that calls Caller).
func Caller(skip int) Site {
	var pcs [1]uintptr
	if runtime.Callers(skip+2, pcs[:]) == 0 {
		return Site{}
	}
	fr, _ := runtime.CallersFrames(pcs[:]).Next()
	return Site{PC: pcs[0], File: fr.File, Line: fr.Line, Func: fr.Function}
}

// CallerPC returns only the program counter of the caller skip frames up; it
// is cheap enough to call on every hook registration. Resolve it with
// FromPC when it must be printed.
func CallerPC(skip int) uintptr {
	var pcs [1]uintptr
	if runtime.Callers(skip+2, pcs[:]) == 0 {
		return 0
	}
	return pcs[0]
}

// FromPC resolves a program counter returned by CallerPC.
func FromPC(pc uintptr) Site {
	if pc == 0 {
		return Site{}
	}
	fr, _ := runtime.CallersFrames([]uintptr{pc}).Next()
	return Site{PC: pc, File: fr.File, Line: fr.Line, Func: fr.Function}
}

var names sync.Map // uintptr → string

// Name returns FromPC(pc).String(), cached: effects are named by their call
// site at every step.
func Name(pc uintptr) string {
	if v, ok := names.Load(pc); ok {
		return v.(string)
	}
	s := FromPC(pc).String()
	names.Store(pc, s)
	return s
}

// Panic returns the site that raised the panic being recovered: the first
// frame after the runtime's panic machinery that is not in the standard
// library's runtime package. Call it from the deferred function that
// recovers.
func Panic() Site {
	var pcs [64]uintptr
	n := runtime.Callers(2, pcs[:])
	frames := runtime.CallersFrames(pcs[:n])
	afterPanic := false
	for {
		fr, more := frames.Next()
		if strings.HasPrefix(fr.Function, "runtime.gopanic") || strings.HasPrefix(fr.Function, "runtime.panic") {
			afterPanic = true
		} else if afterPanic && !strings.HasPrefix(fr.Function, "runtime.") {
			return Site{PC: fr.PC, File: fr.File, Line: fr.Line, Func: fr.Function}
		}
		if !more {
			return Site{}
		}
	}
}

// Stack identifies a call by its caller and the callers above it, up to a
// boundary, so that calls made through one helper function from different
// places differ. It is comparable; the zero Stack is unknown.
type Stack struct{ id string }

// stacks caches CallerStack's results. The map is never changed once
// stored: a miss, rare once every call site has been seen, stores a copy
// with one more entry, so that a hit takes no lock (a read lock's atomic
// add cost more than the rest of a hit).
//
// The map is keyed by a hash of the stackKey (see stackKey.hash), so that
// a lookup hashes one word instead of nine; each hash holds the keys that
// share it, compared in full.
var (
	stacksMu sync.Mutex // serialises the misses
	stacks   atomic.Pointer[map[uint64][]stackEntry]
)

type stackEntry struct {
	k  stackKey
	st Stack
}

// stackKey is what Frames.Stack caches a Stack by: the return addresses of
// the caller's frames, either the physical frames the frame walk reads from
// CallerFrames' caller up (the call site of CallerFrames in pcs[0] fixes
// skip, and the boundary its caller passes), or runtime.Callers' logical
// frames from skip up.
type stackKey struct {
	pcs      [8]uintptr
	physical bool
	skip     uint8 // CallerFrames' skip (pcs[0], its call site, fixes it too)
}

// hash mixes the key's words into one: each word is multiplied by its
// own odd constant (the multiplications are independent, so they overlap),
// and the sum is mixed once more.
func (k *stackKey) hash() uint64 {
	h := uint64(k.pcs[0])*0x9e3779b97f4a7c15 + uint64(k.pcs[1])*0xc2b2ae3d27d4eb4f +
		uint64(k.pcs[2])*0x165667b19e3779f9 + uint64(k.pcs[3])*0xd6e8feb86659fd93 +
		uint64(k.pcs[4])*0xff51afd7ed558ccd + uint64(k.pcs[5])*0xc4ceb9fe1a85ec53 +
		uint64(k.pcs[6])*0x94d049bb133111eb + uint64(k.pcs[7])*0xbf58476d1ce4e5b9
	if k.physical {
		h++
	}
	h += uint64(k.skip) << 1
	h ^= h >> 32
	return h * 0x9e3779b97f4a7c15
}

// CallerStack returns the Stack of the caller skip frames up (0 is the
// function that calls CallerStack): at most three frames, stopping before
// the first one for which boundary reports true. The frames from the
// boundary up are the caller's machinery (the code that executes a prompt
// function), not the user's, and may differ from one call to the next. The
// result is cached by program counters, so a call costs a walk of skip+5
// frames (by frame pointers where the architecture has them, see fp.go)
// and a map lookup. skip must be at most 3.
//
// It is CallerFrames(skip+1).Stack(boundary).
//
//go:noinline
func CallerStack(skip int, boundary func(function string) bool) Stack {
	return CallerFrames(skip + 1).Stack(boundary)
}

// Frames are the return addresses of a caller's frames, as CallerFrames
// read them. They are comparable: two calls from the same place, through
// the same callers, read equal Frames, so code that calls from the same
// places again and again (a prompt function at every execution) can
// compare Frames with the last ones it named and call Stack only when they
// differ.
type Frames struct{ k stackKey }

// CallerFrames reads the frames of the caller skip frames up (0 is the
// function that calls CallerFrames) and above it, enough for Stack: a walk
// of skip+4 frames by frame pointers, or runtime.Callers. It takes no lock
// and allocates nothing. skip must be at most 4.
//
//go:noinline
func CallerFrames(skip int) Frames {
	k := stackKey{skip: uint8(skip)}
	if n := skip + 4; fast() && n <= len(k.pcs) {
		// Physical frames cover at least as many logical ones.
		if got, status := walk(k.pcs[:n]); got == n || status == statusEnd {
			k.physical = true
		} else {
			k.pcs = [8]uintptr{}
		}
	}
	if !k.physical {
		runtime.Callers(skip+2, k.pcs[:4])
	}
	return Frames{k}
}

// Stack names the frames as CallerStack describes, up to the first one for
// which boundary reports true. It is cached by the frames' program
// counters: one map lookup once the frames were named. A call site must
// pass the same boundary every time.
func (f Frames) Stack(boundary func(function string) bool) Stack {
	k := &f.k
	h := k.hash()
	if st, ok := cachedStack(h, k); ok {
		return st
	}
	drop := 0 // logical frames to skip
	if k.physical {
		drop = int(k.skip)
	}
	return cacheStack(h, k, Stack{id: stackID(k.pcs, drop, boundary)})
}

// cachedStack looks k, whose hash is h, up in the cache.
func cachedStack(h uint64, k *stackKey) (Stack, bool) {
	if m := stacks.Load(); m != nil {
		for i := range (*m)[h] {
			if e := &(*m)[h][i]; e.k == *k {
				return e.st, true
			}
		}
	}
	return Stack{}, false
}

// cacheStack stores st under k, whose hash is h, unless k is there
// already, and returns the Stack stored under k.
func cacheStack(h uint64, k *stackKey, st Stack) Stack {
	stacksMu.Lock()
	defer stacksMu.Unlock()
	if got, ok := cachedStack(h, k); ok { // stored by another goroutine since the lookup
		return got
	}
	old := stacks.Load()
	var m map[uint64][]stackEntry
	if old != nil {
		m = maps.Clone(*old)
	} else {
		m = make(map[uint64][]stackEntry, 1)
	}
	m[h] = append(slices.Clip(m[h]), stackEntry{*k, st}) // clipped: the old map's slice is shared
	stacks.Store(&m)
	return st
}

// stackID names the frames of pcs after the first drop ones, as
// CallerStack describes. (A function of its own so that only a miss copies
// pcs to the heap.)
func stackID(pcs [8]uintptr, drop int, boundary func(function string) bool) string {
	n := 0
	for n < len(pcs) && pcs[n] != 0 {
		n++
	}
	var parts []string
	frames := runtime.CallersFrames(pcs[:n])
	for len(parts) < 3 {
		fr, more := frames.Next()
		switch {
		case fr.Function == "" || len(parts) > 0 && boundary != nil && boundary(fr.Function):
			return strings.Join(parts, " ← ")
		case isWrapper(fr):
			// runtime.Callers leaves wrappers out; the walk reads them.
		case drop > 0:
			drop--
		default:
			parts = append(parts, Site{File: fr.File, Line: fr.Line}.String())
		}
		if !more {
			break
		}
	}
	return strings.Join(parts, " ← ")
}

// isWrapper reports whether fr is a wrapper the compiler wrote: a method
// value's (File "<autogenerated>"), or the function a go or defer statement
// with arguments calls (".gowrap1", ".deferwrap1").
func isWrapper(fr runtime.Frame) bool {
	if fr.File == "<autogenerated>" {
		return true
	}
	name := fr.Function
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	return strings.Contains(name, ".gowrap") || strings.Contains(name, ".deferwrap")
}

// IsZero reports whether s is unknown.
func (s Stack) IsZero() bool { return s.id == "" }

// Name returns the innermost frame, "file.go:12".
func (s Stack) Name() string {
	if s.id == "" {
		return "unknown"
	}
	name, _, _ := strings.Cut(s.id, " ← ")
	return name
}

// String returns the frames, innermost first: "helpers.go:12 ← agent.go:30".
func (s Stack) String() string {
	if s.id == "" {
		return "unknown"
	}
	return s.id
}
