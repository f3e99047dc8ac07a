package evals

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/reprompt/reprompt/evals/internal/hotpath"
	"github.com/reprompt/reprompt/llm"
	"github.com/stretchr/testify/require"
)

// TestTopStat checks the overall Stat kept in bounded memory against stat
// of all the values, for every count of values up to the bound: the same
// 95th percentile, the same mean for whole numbers, within the last bits
// for floats.
func TestTopStat(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name  string
		n     int
		value func() float64
	}{
		{"steps", 5000, func() float64 { return float64(1 + r.IntN(4)) }},
		{"tokens", 1234, func() float64 { return float64(r.IntN(100000)) }},
		{"latency", 997, func() float64 { return r.ExpFloat64() * 12.5 }},
		{"cost", 300, func() float64 { return float64(r.IntN(50)) * 1.3e-6 }},
		{"zeros", 40, func() float64 { return 0 }},
		{"one", 1, func() float64 { return 7 }},
		{"increasing", 2000, nil},
		{"decreasing", 2000, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := hotpath.NewTop(tc.n)
			assert.Equal(t, Stat{}, statOf(ts), "no values")
			var all []float64
			for i := range tc.n {
				var x float64
				switch tc.name {
				case "increasing":
					x = float64(i)
				case "decreasing":
					x = float64(tc.n - i)
				default:
					x = tc.value()
				}
				ts.Add(x)
				all = append(all, x)
				want := stat(slices.Clone(all))
				got := statOf(ts)
				require.Equal(t, want.P95, got.P95, "p95 of %d values", i+1)
				require.InEpsilon(t, want.Mean+1, got.Mean+1, 1e-12, "mean of %d values", i+1)
				if tc.name != "latency" && tc.name != "cost" {
					require.Equal(t, want.Mean, got.Mean, "mean of %d whole numbers", i+1)
				}
			}
			assert.LessOrEqual(t, ts.Cap(), tc.n/20+2, "values kept for %d", tc.n)
		})
	}
}

// BenchmarkCaseFigures measures a case's figures as an eval makes them
// when the case is written: its 5 runs measured, added to the overall
// figures of 5,000 runs.
func BenchmarkCaseFigures(b *testing.B) {
	const k = 5
	runs := make([]RunResult, k)
	for i := range runs {
		runs[i] = RunResult{Run: i, Pass: i != 2, Steps: 2, Usage: llm.Usage{InputTokens: 214, OutputTokens: 15}, LatencyMS: 0.02 + float64(i)*0.003}
	}
	m, o := newMeasures(k), newOverall(1000*k)
	b.ReportAllocs()
	for b.Loop() {
		acc := caseAcc{Runs: runs}
		_ = caseResult(&acc, "case", k, m, o)
	}
}
