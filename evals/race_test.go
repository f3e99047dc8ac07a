//go:build race

package evals_test

// raceEnabled reports whether the race detector is on: it slows the runs
// and the eval unevenly, so their CPU times do not compare.
const raceEnabled = true
