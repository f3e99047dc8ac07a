package hotpath

import "sync"

// Sched hands out an eval's runs, case by case in dataset order, and
// gathers their results R until their case is complete and written. At
// most window cases are under way (given out and not yet written), so that
// memory does not grow with the dataset. Its jobs are numbered c·k + run;
// I is what each run of a case needs, made once a case.
type Sched[R, I any] struct {
	mu   sync.Mutex
	cond sync.Cond // a case completed, a case written, a worker done, the eval stopped

	k, window, total int
	next             int          // the next job to hand out
	halted           bool         // no case is handed out any more
	written          int          // the cases written, in order
	workers          int          // the worker goroutines still running
	accs             []*Acc[R, I] // the cases under way, case c at c % window
	stopped          func() bool  // the eval stopped (budget, context): start no case
	info             func(c int) I
	// reuse: a case's memory is used again for a later case once the
	// case is written (its results are not kept); free holds it meanwhile.
	reuse bool
	free  []*Acc[R, I]
}

// Acc gathers a case's results until they are all in.
type Acc[R, I any] struct {
	Got  int // runs in, skipped included
	Runs []R // the runs made, in the order they ended
	Info I
}

// flushBatch is how many complete cases FlushReady waits for before it
// writes them, one after the other: written between runs one at a time,
// each case found the eval's code and data gone from the processor's
// caches, and cost about five times what it costs in a row.
const flushBatch = 8

// NewSched returns the Sched of cases × k runs made by conc goroutines
// (at 1, the caller's, which writes them too: see FlushReady), info
// making each case's I. With reuse, a written case's memory serves a
// later case.
func NewSched[R, I any](cases, k, conc int, reuse bool, stopped func() bool, info func(c int) I) *Sched[R, I] {
	window := 2 * conc
	if conc == 1 { // the caller's goroutine makes the runs and writes them in batches
		window = 2 * flushBatch
	}
	s := &Sched[R, I]{k: k, window: window, total: cases * k, workers: conc, reuse: reuse, stopped: stopped, info: info}
	s.accs = make([]*Acc[R, I], s.window)
	s.cond.L = &s.mu
	return s
}

// Wake wakes the goroutines that wait: the eval stopped.
func (s *Sched[R, I]) Wake() {
	s.mu.Lock()
	s.cond.Broadcast()
	s.mu.Unlock()
}

// claim returns the next run to make, or false when there is none: every
// run was handed out, or the eval stopped before the next case. It waits
// while window cases are under way. s.mu is held.
func (s *Sched[R, I]) claim() (c, run int, ok bool) {
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

// newAcc returns the Acc of case c, a written case's if there is
// one. s.mu is held.
func (s *Sched[R, I]) newAcc(c int) *Acc[R, I] {
	var acc *Acc[R, I]
	if n := len(s.free); n > 0 {
		acc, s.free = s.free[n-1], s.free[:n-1]
	} else {
		acc = &Acc[R, I]{Runs: make([]R, 0, s.k)}
	}
	acc.Info = s.info(c)
	return acc
}

// written records that acc's case was written, in dataset order. s.mu
// is held.
func (s *Sched[R, I]) wrote(acc *Acc[R, I]) {
	s.written++
	s.cond.Broadcast() // a place in the window
	if s.reuse {
		clear(acc.Runs) // what the runs point to goes
		*acc = Acc[R, I]{Runs: acc.Runs[:0]}
		s.free = append(s.free, acc)
	}
}

// Work makes one run with do (false: skipped, the eval stopped) and
// gathers it; it reports false when there was none to make.
func (s *Sched[R, I]) Work(do func(c, run int, info *I) (R, bool)) bool {
	s.mu.Lock()
	c, run, ok := s.claim()
	var info *I
	if ok {
		info = &s.accs[c%s.window].Info
	}
	s.mu.Unlock()
	if !ok {
		return false
	}
	res, made := do(c, run, info)
	s.mu.Lock()
	acc := s.accs[c%s.window]
	acc.Got++
	if made {
		acc.Runs = append(acc.Runs, res)
	}
	if acc.Got == s.k {
		s.cond.Broadcast() // the case can be written
	}
	s.mu.Unlock()
	return true
}

// Done marks a worker goroutine done.
func (s *Sched[R, I]) Done() {
	s.mu.Lock()
	s.workers--
	s.cond.Broadcast()
	s.mu.Unlock()
}

// ready returns the next case to write if it is complete, and takes it
// out of the window. s.mu is held.
func (s *Sched[R, I]) ready() *Acc[R, I] {
	if s.written*s.k >= s.next {
		return nil // not handed out
	}
	i := s.written % s.window
	acc := s.accs[i]
	if acc.Got < s.k {
		return nil
	}
	s.accs[i] = nil // its memory goes once written
	return acc
}

// FlushReady writes, with flush, the complete cases that come next in
// dataset order, once there are flushBatch of them or, with all false,
// any.
func (s *Sched[R, I]) FlushReady(flush func(*Acc[R, I]), all bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !all {
		n := 0
		for c := s.written; n < flushBatch && c*s.k < s.next; c++ {
			if acc := s.accs[c%s.window]; acc.Got < s.k {
				break
			}
			n++
		}
		if n < flushBatch {
			return
		}
	}
	for acc := s.ready(); acc != nil; acc = s.ready() {
		s.flush(flush, acc)
		s.wrote(acc)
	}
}

// flush writes acc with flush, s.mu not held meanwhile. A panic in flush
// (an OnCase of the caller's) goes up with s.mu held again, as the
// callers' deferred Unlock wants it, and halts the eval: no worker is left
// waiting for a case that will never be written.
func (s *Sched[R, I]) flush(flush func(*Acc[R, I]), acc *Acc[R, I]) {
	s.mu.Unlock()
	ok := false
	defer func() {
		s.mu.Lock()
		if !ok {
			s.halted = true
			s.cond.Broadcast()
		}
	}()
	flush(acc)
	ok = true
}

// Collect writes the cases, in dataset order, as the worker goroutines
// complete them, until they are all done.
func (s *Sched[R, I]) Collect(flush func(*Acc[R, I])) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if acc := s.ready(); acc != nil {
			s.flush(flush, acc)
			s.wrote(acc)
			continue
		}
		if s.workers == 0 {
			return
		}
		s.cond.Wait()
	}
}
