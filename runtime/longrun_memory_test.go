package runtime_test

import (
	"context"
	"fmt"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/runtime"
)

// The long run of issue 23 (item 2): a coding agent reading 2 KB files
// under builtin.Defaults for a model with a window of a million tokens,
// where trimming rewrites the transcript at every step and compaction
// comes only after about 2,500 steps.
const (
	bigWindow  = 1_000_000
	bigReserve = 32_768
)

// longRunDefaults runs the long run for steps steps and returns the result
// with the live heap it holds (after a collection) and the CPU time it took.
func longRunDefaults(tb testing.TB, steps int) (res *runtime.Result, retained uint64, cpu time.Duration) {
	tb.Helper()
	before := liveHeap()
	cpu0, _ := cpuTime()
	m := &readerModel{n: steps - 1}
	res, err := runtime.Run(context.Background(), m, longRunAgent(bigWindow, bigReserve),
		runtime.Config{MaxSteps: steps, Window: bigWindow, Reserve: bigReserve})
	cpu1, _ := cpuTime()
	require.NoError(tb, err)
	require.Len(tb, res.Steps, steps, "steps run")
	after := liveHeap()
	goruntime.KeepAlive(res)
	return res, after - before, cpu1 - cpu0
}

// BenchmarkLongRunDefaults measures what a long run under the default
// context management keeps and costs per step, with a window of a million
// tokens: retained-B/step is the live heap the Result holds (every step
// record, the transcript, the state) divided by the steps; cpu-ns/step is
// the CPU time of the run (collections included) per step. Both must not
// grow with the history.
func BenchmarkLongRunDefaults(b *testing.B) {
	for _, steps := range []int{300, 1000, 3000} {
		b.Run(fmt.Sprintf("steps=%d", steps), func(b *testing.B) {
			b.ReportAllocs()
			var retained uint64
			var cpu time.Duration
			for b.Loop() {
				_, r, c := longRunDefaults(b, steps)
				retained += r
				cpu += c
			}
			n := float64(b.N * steps)
			b.ReportMetric(float64(retained)/n, "retained-B/step")
			if _, ok := cpuTime(); ok {
				b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/step")
			}
		})
	}
}
