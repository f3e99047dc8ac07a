//go:build race

package viewer_test

const raceEnabled = true
