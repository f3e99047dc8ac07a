package evals_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	goruntime "runtime"
	"syscall"
	"testing"
	"time"

	"github.com/reprompt/reprompt/evals"
	"github.com/reprompt/reprompt/evals/check"
	"github.com/reprompt/reprompt/runtime"
	"github.com/stretchr/testify/require"
)

// benchEval is 1,000 cases × 5 runs on scripted models, a fifth of the
// runs with a mistake, streamed to w.
func benchEval(n, k, conc int) *evals.Eval[issue, triage] {
	cs := cases(n)
	ms := map[string][]mistake{}
	for i, c := range cs {
		if i%5 == 0 {
			ms[c.Name] = []mistake{wrongPriority, right, noRead}
		}
	}
	return &evals.Eval[issue, triage]{
		Name: "bench", Cases: cs, Prompt: triageAgent, Models: scripted(cs, ms),
		Checks:      []check.Check{check.Called("read_issue", nil), check.NoToolError(), check.MaxSteps(3)},
		K:           k,
		Concurrency: conc,
	}
}

// BenchmarkEval compares the eval of 1,000 cases × 5 runs (eval) with the
// same 5,000 runs made by a bare loop of runtime.Run (runs): the
// difference is the eval's own overhead (checks, failures in golden form,
// figures, the report streamed to a file). One goroutine each, so that the
// times compare. Compare with benchstat:
//
//	go test ./evals -run '^$' -bench 'Eval$' -benchtime 5x -count 10 | tee bench.txt
//	benchstat -col /mode bench.txt
//
// cpu-ms/op, the CPU time of the process, is the figure to read on a
// machine shared with other work, where sec/op varies by half.
func BenchmarkEval(b *testing.B) {
	const n, k = 1000, 5
	b.Run("mode=runs", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b)()
		e := benchEval(n, k, 1)
		for b.Loop() {
			for _, c := range e.Cases {
				for run := range k {
					m, err := e.Models(c.Name, run)
					require.NoError(b, err)
					_, err = runtime.Run(context.Background(), m, e.Prompt(c.Input), e.Config)
					_ = err // the noRead runs succeed; errors are not expected
				}
			}
		}
	})
	b.Run("mode=eval", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b)()
		e := benchEval(n, k, 1)
		path := filepath.Join(b.TempDir(), "result.json")
		for b.Loop() {
			f, err := os.Create(path)
			require.NoError(b, err)
			rep, err := e.Run(context.Background(), f)
			require.NoError(b, err)
			require.NoError(b, f.Close())
			require.Equal(b, n*k, rep.Overall.Runs)
		}
	})
}

// reportCPU reports the process's CPU time (user and system, GC included)
// per op, which a machine shared with other work disturbs less than the
// wall time: call the function it returns at the end of the benchmark.
func reportCPU(b *testing.B) func() {
	start := cpuTime()
	return func() { b.ReportMetric(float64(cpuTime()-start)/1e6/float64(b.N), "cpu-ms/op") }
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestMemoryBounded runs 300 cases × 5 runs streamed to a writer and
// checks that the live heap stays far below what holding the runs would
// take: the runs' trajectories are dropped once checked, and a case's runs
// once written.
func TestMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("1,500 runs")
	}
	e := benchEval(300, 5, 2)
	var peak uint64
	seen := 0
	e.OnCase = func(*evals.CaseResult) {
		if seen++; seen%100 == 0 {
			goruntime.GC()
			var ms goruntime.MemStats
			goruntime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}
	}
	rep, err := e.Run(t.Context(), io.Discard)
	require.NoError(t, err)
	require.Equal(t, 1500, rep.Overall.Runs)
	t.Logf("peak live heap %.1f MB over 1,500 runs", float64(peak)/1e6)
	require.Less(t, peak, uint64(8<<20), "live heap: the runs must not be held")
}
