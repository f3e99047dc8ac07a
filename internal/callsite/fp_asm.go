//go:build (amd64 || arm64) && !purego

package callsite

// haveWalk reports whether this architecture has the frame walks.
const haveWalk = true

// walk fills pcs with the return addresses of its caller's physical frames,
// innermost first: pcs[0] is where its caller returns to. It stops at the
// end of pcs, at the outermost frame, or at a frame pointer that does not
// point a little above the one before (a frame called from C may have
// any), and says which (statusFull, statusEnd, statusBad).
//
//go:noescape
func walk(pcs []uintptr) (n int, status int)

// find walks its caller's frames, as walk does, until one returns to pc,
// and reports statusFound, or statusEnd with the outermost frame's return
// address, or statusBad (also when limit frames were walked).
func find(pc uintptr, limit int) (status int, last uintptr)

// getg returns the calling goroutine's g (see G).
func getg() uintptr
