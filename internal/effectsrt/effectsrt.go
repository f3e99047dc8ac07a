// Package effectsrt lets the packages that drive effects (prompt, through
// internal/promptrt, and the runtime) make the effects manager, which
// package effects keeps out of its API. It imports nothing, so that
// package effects can set NewManager when it is initialised; the value is
// an effects manager behind promptrt.Manager, an interface this package
// cannot name.
package effectsrt

// NewManager returns a new, empty effects manager. Package effects sets it.
var NewManager func() any
