package runtime_test

import (
	"context"
	"fmt"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/llm"
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
	return longRunIn(tb, steps, bigWindow, bigReserve)
}

// longRunIn is longRunDefaults with another window; with none,
// builtin.Defaults registers no effects.
func longRunIn(tb testing.TB, steps, window, reserve int) (res *runtime.Result, retained uint64, cpu time.Duration) {
	tb.Helper()
	before := liveHeap()
	cpu0, _ := cpuTime()
	m := &readerModel{n: steps - 1}
	res, err := runtime.Run(context.Background(), m, longRunAgent(window, reserve),
		runtime.Config{MaxSteps: steps, Window: window, Reserve: reserve})
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
			benchLongRun(b, steps, bigWindow, bigReserve)
		})
	}
}

// BenchmarkLongRunNoEffects is the same long run with no window, and so
// no effects: the transcript only grows, and the records share its array.
// It is what BenchmarkLongRunDefaults compares with.
func BenchmarkLongRunNoEffects(b *testing.B) {
	for _, steps := range []int{1000} {
		b.Run(fmt.Sprintf("steps=%d", steps), func(b *testing.B) { benchLongRun(b, steps, 0, 0) })
	}
}

func benchLongRun(b *testing.B, steps, window, reserve int) {
	b.ReportAllocs()
	var retained uint64
	var cpu time.Duration
	for b.Loop() {
		_, r, c := longRunIn(b, steps, window, reserve)
		retained += r
		cpu += c
	}
	n := float64(b.N * steps)
	b.ReportMetric(float64(retained)/n, "retained-B/step")
	if _, ok := cpuTime(); ok {
		b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/step")
	}
}

// TestLongRunDefaultsRetainedFlat checks that the memory a long run under
// builtin.Defaults keeps per step does not grow with the history: the
// bytes retained per step at 3,000 steps are at most 1.5 times those at
// 300 (they were 6.8 times when every commit cloned the transcript and
// every step record kept its step's clone: 43.8 KB and 299 KB).
func TestLongRunDefaultsRetainedFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 3,300 steps")
	}
	longRunDefaults(t, 10) // fill process-wide caches first
	_, small, _ := longRunDefaults(t, 300)
	res, large, _ := longRunDefaults(t, 3000)
	compacted := false
	for _, s := range res.Steps {
		compacted = compacted || len(s.Summaries) > 0
	}
	per300, per3000 := float64(small)/300, float64(large)/3000
	t.Logf("retained per step: %.0f B at 300 steps, %.0f B at 3000 (compacted: %v)", per300, per3000, compacted)
	assert.LessOrEqual(t, per3000, 1.5*per300, "bytes retained per step at 3000 steps against 300")
}

// sentModel is a readerModel that keeps the requests of the steps it was
// sent.
type sentModel struct {
	readerModel
	sent []*llm.Request
}

func (m *sentModel) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	if req.Purpose == llm.PurposeStep {
		m.sent = append(m.sent, req)
	}
	return m.readerModel.Generate(ctx, req)
}

// TestStepRequestIsWhatWasSent checks that the records, which keep of each
// request only what changed since the previous one, give back every
// request as it was sent, through trimming at every step and compactions.
func TestStepRequestIsWhatWasSent(t *testing.T) {
	const steps, window, reserve = 80, 12_000, 2_000
	m := &sentModel{readerModel: readerModel{n: steps - 1}}
	res, err := runtime.Run(context.Background(), m, longRunAgent(window, reserve),
		runtime.Config{MaxSteps: steps, Window: window, Reserve: reserve})
	require.NoError(t, err)
	require.Len(t, res.Steps, steps, "steps run")
	require.Len(t, m.sent, steps, "requests sent")
	require.Positive(t, m.summaries, "summaries: the run does not compact")
	for i, s := range res.Steps {
		got := s.Request()
		require.NotNil(t, got, "step %d: Request", i)
		assert.Empty(t, cmp.Diff(m.sent[i], got), "step %d: request (-want +got)", i)
		assert.NotSame(t, got, s.Request(), "step %d: Request returns a new request at each call", i)
	}
}
