package evals_test

import (
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"syscall"
	"testing"
	"time"
)

func ru() (u, s time.Duration, minflt int64) {
	var r syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &r)
	return time.Duration(r.Utime.Nano()), time.Duration(r.Stime.Nano()), r.Minflt
}

func TestZZSys(t *testing.T) {
	e := benchEval(1000, 5, 1)
	path := filepath.Join(t.TempDir(), "result.json")
	m := func(f func()) (float64, float64, float64) {
		_ = os.Remove(path)
		goruntime.GC()
		u0, s0, f0 := ru()
		f()
		u1, s1, f1 := ru()
		return float64(u1-u0) / 1e6, float64(s1-s0) / 1e6, float64(f1 - f0)
	}
	var ru_, rs, rf, eu, es, ef []float64
	for range 11 {
		a, b, c := m(func() { bareRuns(t, e) })
		ru_, rs, rf = append(ru_, a), append(rs, b), append(rf, c)
		a, b, c = m(func() { evalToFile(t, e, path) })
		eu, es, ef = append(eu, a), append(es, b), append(ef, c)
	}
	med := func(x []float64) float64 { slices.Sort(x); return x[len(x)/2] }
	t.Logf("runs: user %.1f ms sys %.1f ms faults %.0f", med(ru_), med(rs), med(rf))
	t.Logf("eval: user %.1f ms sys %.1f ms faults %.0f", med(eu), med(es), med(ef))
}
