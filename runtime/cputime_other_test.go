//go:build !unix

package runtime_test

import "time"

// cpuTime returns 0: the process's CPU time is read on Unix only.
func cpuTime() time.Duration { return 0 }
