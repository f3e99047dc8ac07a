//go:build unix

package anthropic_test

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time the process used so far (user and system),
// which other processes on a loaded machine do not inflate as they do wall
// time; ok is false where it cannot be read.
func cpuTime() (d time.Duration, ok bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
