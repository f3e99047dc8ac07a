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
	checks           func(c int) []check.Check
}

// caseAcc gathers a case's runs until they are all in.
type caseAcc struct {
	got    int // runs in, skipped included
	runs   []RunResult
	checks []check.Check // the case's runs' checks, made once a case
}

func newSched(cases, k, conc int, stopped func() bool, checks func(c int) []check.Check) *sched {
	s := &sched{k: k, window: 2 * conc, total: cases * k, workers: conc, stopped: stopped, checks: checks}
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
			s.accs[c%s.window] = &caseAcc{runs: make([]RunResult, 0, s.k), checks: s.checks(c)}
		}
		s.next++
		return c, run, true
	}
}

// work makes one run with do (false: skipped, the eval stopped) and
// gathers it; it reports false when there was none to make.
func (s *sched) work(do func(c, run int, checks []check.Check) (RunResult, bool)) bool {
	s.mu.Lock()
	c, run, ok := s.claim()
	var checks []check.Check
	if ok {
		checks = s.accs[c%s.window].checks
	}
	s.mu.Unlock()
	if !ok {
		return false
	}
	res, made := do(c, run, checks)
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
// dataset order.
func (s *sched) flushReady(flush func(*caseAcc)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for acc := s.ready(); acc != nil; acc = s.ready() {
		s.mu.Unlock()
		flush(acc)
		s.mu.Lock()
		s.written++
		s.cond.Broadcast() // a place in the window
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
			s.written++
			s.cond.Broadcast()
			continue
		}
		if s.workers == 0 {
			return
		}
		s.cond.Wait()
	}
}
