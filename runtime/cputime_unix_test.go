//go:build unix

package runtime_test

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time (user and system) the process has used, or
// false where it is not known. On a machine shared with other work it
// varies much less than wall time, so benchmarks report it per step as
// well.
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
