package evals

import (
	"sync"

	"github.com/reprompt/reprompt/evals/check"
)

// sched hands out an eval's runs, case by case in dataset order, and
// gathers them until their case is complete and written. At most window
// cases are under way (given out and not yet written), so that memory does
// not grow with the dataset. Its jobs are numbered c·k + run.
type sched struct {
	mu   sync.Mutex
	cond sync.Cond // a case completed, a case written, a worker done, the eval stopped

	k, window, total int
	next             int         // the next job to hand out
	halted           bool        // no case is handed out any more
	written          int         // the cases written, in order
	workers          int         // the worker goroutines still running
	accs             []*caseAcc  // the cases under way, case c at c % window
	stopped          func() bool // the eval stopped (budget, context): start no case
	info             func(c int) caseInfo
	// reuse: a case's memory is used again for a later case once the
	// case is written (its runs are not kept); free holds it meanwhile.
	reuse bool
	free  []*caseAcc
}

// caseAcc gathers a case's runs until they are all in.
type caseAcc struct {
	got  int // runs in, skipped included
	runs []RunResult
	info caseInfo
}

// caseInfo is what each run of a case needs, made once a case.
type caseInfo struct {
	name            string
	checks          []check.Check // the eval's, the Expected's, the case's own
	input, expected any           // the case's, as check.Trajectory holds them
}

// flushBatch is how many complete cases flushReady waits for before it
// writes them, one after the other: written between runs one at a time,
// each case found the eval's code and data gone from the processor's
// caches, and cost about five times what it costs in a row.
const flushBatch = 8

func newSched(cases, k, conc int, reuse bool, stopped func() bool, info func(c int) caseInfo) *sched {
	window := 2 * conc
	if conc == 1 { // the caller's goroutine makes the runs and writes them in batches
		window = 2 * flushBatch
	}
	s := &sched{k: k, window: window, total: cases * k, workers: conc, reuse: reuse, stopped: stopped, info: info}
	s.accs = make([]*caseAcc, s.window)
	s.cond.L = &s.mu
	return s
}

// wake wakes the goroutines that wait: the eval stopped.
func (s *sched) wake() {
	s.mu.Lock()
	s.cond.Broadcast()
	s.mu.Unlock()
}

// claim returns the next run to make, or false when there is none: every
// run was handed out, or the eval stopped before the next case. It waits
// while window cases are under way. s.mu is held.
func (s *sched) claim() (c, run int, ok bool) {
	for {
		if s.next >= s.total || s.halted {
			return 0, 0, false
		}
		c, run = s.next/s.k, s.next%s.k
		if run == 0 {
			if s.stopped() {
				s.halted = true
				s.cond.Broadcast()
				return 0, 0, false
			}
			if c-s.written >= s.window {
				s.cond.Wait()
				continue
			}
			s.accs[c%s.window] = s.newAcc(c)
		}
		s.next++
		return c, run, true
	}
}

// newAcc returns the caseAcc of case c, a written case's if there is
// one. s.mu is held.
func (s *sched) newAcc(c int) *caseAcc {
	var acc *caseAcc
	if n := len(s.free); n > 0 {
		acc, s.free = s.free[n-1], s.free[:n-1]
	} else {
		acc = &caseAcc{runs: make([]RunResult, 0, s.k)}
	}
	acc.info = s.info(c)
	return acc
}

// written records that acc's case was written, in dataset order. s.mu
// is held.
func (s *sched) wrote(acc *caseAcc) {
	s.written++
	s.cond.Broadcast() // a place in the window
	if s.reuse {
		clear(acc.runs) // what the runs point to goes
		*acc = caseAcc{runs: acc.runs[:0]}
		s.free = append(s.free, acc)
	}
}

// work makes one run with do (false: skipped, the eval stopped) and
// gathers it; it reports false when there was none to make.
func (s *sched) work(do func(c, run int, info *caseInfo) (RunResult, bool)) bool {
	s.mu.Lock()
	c, run, ok := s.claim()
	var info *caseInfo
	if ok {
		info = &s.accs[c%s.window].info
	}
	s.mu.Unlock()
	if !ok {
		return false
	}
	res, made := do(c, run, info)
	s.mu.Lock()
	acc := s.accs[c%s.window]
	acc.got++
	if made {
		acc.runs = append(acc.runs, res)
	}
	if acc.got == s.k {
		s.cond.Broadcast() // the case can be written
	}
	s.mu.Unlock()
	return true
}

// done marks a worker goroutine done.
func (s *sched) done() {
	s.mu.Lock()
	s.workers--
	s.cond.Broadcast()
	s.mu.Unlock()
}

// ready returns the next case to write if it is complete, and takes it
// out of the window. s.mu is held.
func (s *sched) ready() *caseAcc {
	if s.written*s.k >= s.next {
		return nil // not handed out
	}
	i := s.written % s.window
	acc := s.accs[i]
	if acc.got < s.k {
		return nil
	}
	s.accs[i] = nil // its memory goes once written
	return acc
}

// flushReady writes, with flush, the complete cases that come next in
// dataset order, once there are flushBatch of them or, with all false,
// any.
func (s *sched) flushReady(flush func(*caseAcc), all bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !all {
		n := 0
		for c := s.written; n < flushBatch && c*s.k < s.next; c++ {
			if acc := s.accs[c%s.window]; acc.got < s.k {
				break
			}
			n++
		}
		if n < flushBatch {
			return
		}
	}
	for acc := s.ready(); acc != nil; acc = s.ready() {
		s.mu.Unlock()
		flush(acc)
		s.mu.Lock()
		s.wrote(acc)
	}
}

// collect writes the cases, in dataset order, as the worker goroutines
// complete them, until they are all done.
func (s *sched) collect(flush func(*caseAcc)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if acc := s.ready(); acc != nil {
			s.mu.Unlock()
			flush(acc)
			s.mu.Lock()
			s.wrote(acc)
			continue
		}
		if s.workers == 0 {
			return
		}
		s.cond.Wait()
	}
}
