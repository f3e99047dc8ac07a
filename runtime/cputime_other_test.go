//go:build !unix

package runtime_test

import "time"

func cpuTime() (time.Duration, bool) { return 0, false }
