// Package callsite names places in user code: where a hook was called and
// where a panic happened.
package callsite

import (
	"fmt"
	"maps"
	"path/filepath"
	"runtime"
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
var (
	stacksMu sync.Mutex // serialises the misses
	stacks   atomic.Pointer[map[stackKey]Stack]
)

// stackKey is what CallerStack caches a Stack by: the return addresses of
// the caller's frames, either the physical frames the frame walk reads from
// CallerStack's caller up (the call site of CallerStack in pcs[0] fixes
// skip and boundary), or runtime.Callers' logical frames from skip up.
type stackKey struct {
	pcs      [8]uintptr
	physical bool
}

// CallerStack returns the Stack of the caller skip frames up (0 is the
// function that calls CallerStack): at most three frames, stopping before
// the first one for which boundary reports true. The frames from the
// boundary up are the caller's machinery (the code that executes a prompt
// function), not the user's, and may differ from one call to the next. The
// result is cached by program counters, so a call costs a walk of skip+4
// frames (by frame pointers where the architecture has them, see fp.go)
// and a map lookup. skip must be at most 4.
//
//go:noinline
func CallerStack(skip int, boundary func(function string) bool) Stack {
	var k stackKey
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
	if m := stacks.Load(); m != nil {
		if st, ok := (*m)[k]; ok {
			return st
		}
	}
	drop := 0 // logical frames to skip
	if k.physical {
		drop = skip
	}
	st := Stack{id: stackID(k.pcs, drop, boundary)}
	stacksMu.Lock()
	defer stacksMu.Unlock()
	old := stacks.Load()
	var m map[stackKey]Stack
	if old != nil {
		m = maps.Clone(*old)
	} else {
		m = make(map[stackKey]Stack, 1)
	}
	m[k] = st
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
