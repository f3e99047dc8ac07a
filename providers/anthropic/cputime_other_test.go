//go:build !unix

package anthropic_test

import "time"

// cpuTime is not available on this platform.
func cpuTime() (time.Duration, bool) { return 0, false }
