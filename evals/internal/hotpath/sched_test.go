package hotpath

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// job is a run's result in these tests: its case and run.
type job struct{ c, run int }

// TestSchedOneGoroutine makes the runs on the caller's goroutine, as an
// eval at Concurrency 1 does: every case is written once, in order, with
// its runs and its info, the complete cases eight at a time until the
// last ones, and a written case's memory serves a later one.
func TestSchedOneGoroutine(t *testing.T) {
	const cases, k = 20, 3
	s := NewSched[job](cases, k, 1, true, func() bool { return false }, func(c int) int { return 10 * c })
	var written []int
	var made int
	var batches []int // the runs made when each flush wrote something
	accs := map[*Acc[job, int]]bool{}
	flush := func(a *Acc[job, int]) {
		c := len(written)
		written = append(written, c)
		assert.Equal(t, 10*c, a.Info, "case %d: its info", c)
		want := []job{{c, 0}, {c, 1}, {c, 2}}
		assert.Equal(t, want, a.Runs, "case %d: its runs", c)
		accs[a] = true
	}
	do := func(c, run int, info *int) (job, bool) {
		require.Equal(t, 10*c, *info, "case %d: the info of its run %d", c, run)
		made++
		return job{c, run}, true
	}
	for s.Work(do) {
		before := len(written)
		s.FlushReady(flush, false)
		if len(written) > before {
			batches = append(batches, made)
			assert.Equal(t, flushBatch, len(written)-before, "a batch of complete cases")
		}
	}
	s.FlushReady(flush, true)
	assert.Equal(t, cases*k, made, "runs made")
	require.Len(t, written, cases, "cases written")
	assert.True(t, slices.IsSorted(written), "in dataset order")
	assert.Equal(t, []int{flushBatch * k, 2 * flushBatch * k}, batches, "written once eight cases were complete")
	assert.LessOrEqual(t, len(accs), 2*flushBatch+1, "memory reused across %d cases", cases)
}

// TestSchedWorkers makes the runs on several goroutines that end them out
// of order: every case is written once, in order, with all its runs, and
// no more than the window of cases is under way at once.
func TestSchedWorkers(t *testing.T) {
	const cases, k, conc = 60, 4, 3
	s := NewSched[job](cases, k, conc, false, func() bool { return false }, func(c int) int { return c })
	var mu sync.Mutex
	started := map[int]bool{}
	var written []int
	maxUnder := 0
	flush := func(a *Acc[job, int]) {
		c := a.Info
		mu.Lock()
		written = append(written, c)
		mu.Unlock()
		require.Len(t, a.Runs, k, "case %d: its runs", c)
		for _, r := range a.Runs {
			assert.Equal(t, c, r.c, "case %d: a run of another case", c)
		}
	}
	do := func(c, run int, info *int) (job, bool) {
		mu.Lock()
		started[c] = true
		maxUnder = max(maxUnder, len(started)-len(written))
		mu.Unlock()
		time.Sleep(time.Duration((c*7+run*3)%5) * 100 * time.Microsecond) // out of order
		return job{c, run}, true
	}
	for range conc {
		go func() {
			for s.Work(do) {
			}
			s.Done()
		}()
	}
	s.Collect(flush)
	require.Len(t, written, cases, "cases written")
	assert.True(t, slices.IsSorted(written), "in dataset order: %v", written)
	assert.LessOrEqual(t, maxUnder, 2*conc, "cases under way at once")
}

// TestSchedStopped stops handing out cases once stopped reports true: the
// case under way is completed, no other starts, and the runs a do skips
// are counted without a result.
func TestSchedStopped(t *testing.T) {
	const cases, k = 10, 2
	var made atomic.Int32
	stop := func() bool { return made.Load() >= 5 }
	s := NewSched[job](cases, k, 1, false, stop, func(c int) int { return c })
	var written []*Acc[job, int]
	flush := func(a *Acc[job, int]) { written = append(written, a) }
	do := func(c, run int, _ *int) (job, bool) {
		if c == 1 && run == 1 {
			return job{}, false // skipped: not measured
		}
		made.Add(1)
		return job{c, run}, true
	}
	for s.Work(do) {
		s.FlushReady(flush, false)
	}
	s.FlushReady(flush, true)
	assert.Equal(t, int32(5), made.Load(), "runs made before the stop, and the rest of the case under way")
	require.Len(t, written, 3, "cases written: the ones handed out")
	assert.Len(t, written[1].Runs, 1, "case 1: its skipped run has no result")
	assert.Equal(t, k, written[1].Got, "case 1: both runs in")
}
