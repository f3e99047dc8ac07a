package state

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
)

// One transaction run on several goroutines at once (as the runtime runs
// the tools of a sub-agent under its parent call's transaction), while
// another Run holds the store's frame, records the changes of each and
// leaves no goroutine bound once the Runs return.
func TestRunSameTxOnSeveralGoroutines(t *testing.T) {
	s := New()
	holder, tx := s.Begin(), s.Begin()
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = holder.Run(func(context.Context, json.RawMessage) (string, error) {
			close(started)
			<-release
			return "", nil
		}, context.Background(), nil)
	}()
	<-started // holder has the frame: the Runs below are bound by id
	var wg sync.WaitGroup
	var ready sync.WaitGroup
	ready.Add(4)
	for range 4 {
		wg.Go(func() {
			_, _ = tx.Run(func(context.Context, json.RawMessage) (string, error) {
				ready.Done()
				ready.Wait() // all four bound at once
				if err := Update(s, "n", func(n int) int { return n + 1 }); err != nil {
					t.Error(err)
				}
				return "", nil
			}, context.Background(), nil)
		})
	}
	wg.Wait()
	close(release)
	<-done
	if n := tx.Len(); n != 4 {
		t.Errorf("tx recorded %d changes, want 4", n)
	}
	if holder.Len() != 0 {
		t.Errorf("the frame's holder recorded %d changes, want none", holder.Len())
	}
	s.mu.Lock()
	bound, txs := s.bound.Load(), len(s.txs)
	s.mu.Unlock()
	if bound != 0 || txs != 0 {
		t.Errorf("after the Runs: %d bound, %d goroutines in txs; want none", bound, txs)
	}
	Set(s, "live", true) // no transaction: applied at once
	if _, err := Get[bool](s, "live"); err != nil {
		t.Error(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if n, err := Get[int](s, "n"); err != nil || n != 4 {
		t.Errorf("n = %d, %v after commit; want 4", n, err)
	}
}
