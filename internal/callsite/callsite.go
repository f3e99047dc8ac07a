// Package callsite names places in user code, for error messages: where a
// hook was called and where a panic happened. A hook keeps one program
// counter (CallerPC, as log/slog's Logger keeps one per record) and names
// it only when an error is printed. Nothing here is an identity: call sites
// are never compared across processes or saved.
package callsite

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
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
	return FromPC(CallerPC(skip + 1))
}

// CallerPC returns the program counter of the caller skip frames up (0 is
// the function that calls CallerPC): one runtime.Callers of one frame,
// cheap enough for every hook call. Resolve it with FromPC or Name when it
// must be printed.
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

// UserPC returns the program counter of the first caller, skip frames
// up or above (0 is the function that calls UserPC), that is not in this
// module's packages of effects: a hook called by such a helper on the
// user's behalf (effects/builtin's Config.Register registers effects)
// names the user's line. It costs one frame, and a cached lookup, when that caller is the
// user's, as it usually is.
func UserPC(skip int) uintptr {
	pc := CallerPC(skip + 1)
	if !inLibrary(pc) {
		return pc
	}
	var pcs [8]uintptr
	n := runtime.Callers(skip+2, pcs[:])
	for _, p := range pcs[1:n] {
		if !inLibrary(p) {
			return p
		}
	}
	return pc
}

var library sync.Map // uintptr → bool

// inLibrary reports whether pc is in one of this module's packages of
// effects (effects/builtin and the packages under it), which register
// effects on their user's behalf; not in their tests.
func inLibrary(pc uintptr) bool {
	if pc == 0 {
		return false
	}
	if v, ok := library.Load(pc); ok {
		return v.(bool)
	}
	fn := FromPC(pc).Func
	in := strings.HasPrefix(fn, "github.com/reprompt/reprompt/effects/") && !strings.Contains(fn, "_test.")
	library.Store(pc, in)
	return in
}

var names sync.Map // uintptr → string

// Name returns FromPC(pc).String(), cached: effects are named in the step
// records at every step.
func Name(pc uintptr) string {
	if pc == 0 {
		return "unknown"
	}
	if v, ok := names.Load(pc); ok {
		return v.(string)
	}
	s := FromPC(pc).String()
	names.Store(pc, s)
	return s
}

// Panic returns the site that raised the panic being recovered: the first
// frame after the runtime's panic machinery that is not in the standard
// library's runtime package, nor in package state (whose setters panic on
// their caller's mistake). Call it from the deferred function that
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
		} else if afterPanic && !strings.HasPrefix(fr.Function, "runtime.") && !strings.HasPrefix(fr.Function, "github.com/reprompt/reprompt/state.") {
			return Site{PC: fr.PC, File: fr.File, Line: fr.Line, Func: fr.Function}
		}
		if !more {
			return Site{}
		}
	}
}
