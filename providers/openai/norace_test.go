//go:build !race

package openai

// raceEnabled reports whether the race detector is on: it makes sync.Pool
// drop items, so allocation figures are not meaningful.
const raceEnabled = false
