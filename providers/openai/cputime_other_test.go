//go:build !unix

package openai_test

import "time"

// cpuTime is not available on this platform.
func cpuTime() (time.Duration, bool) { return 0, false }
