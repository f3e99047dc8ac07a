//go:build !(amd64 || arm64) || purego

package callsite

// haveWalk reports whether this architecture has the frame walks: this one
// does not, and runtime.Callers does their work.
const haveWalk = false

func walk(pcs []uintptr) (n int, status int) { return 0, statusBad }

func find(pc uintptr, limit int) (status int, last uintptr) { return statusBad, 0 }

func getg() uintptr { return 0 }
