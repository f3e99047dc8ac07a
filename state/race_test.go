package state_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/reprompt/reprompt/state"
)

// Transactions run on parallel goroutines (one found by its frame, the
// others by goroutine id), goroutines they start and unbound goroutines
// set, update and read the store while others encode and copy it, and the
// transactions are committed or discarded while goroutines bound to them
// still write: under -race, nothing races, and the committed changes are
// all there.
func TestStoreUnderConcurrentUse(t *testing.T) {
	s := state.New()
	state.Set(s, "count", 0)
	const calls = 6
	txs := make([]*state.Tx, calls)
	for i := range txs {
		txs[i] = s.Begin()
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.MarshalJSON(); err != nil {
					t.Error(err)
					return
				}
				_ = s.Snapshot()
				_, _ = s.Keys(), s.Version()
				state.Set(s, "free", 1) // unbound: applied at once
			}
		})
	}
	var running sync.WaitGroup
	var outliving sync.WaitGroup
	for i, tx := range txs {
		running.Go(func() {
			_, _ = tx.Run(func(context.Context, json.RawMessage) (string, error) {
				key := fmt.Sprintf("call%d", i)
				for j := range 50 {
					state.Set(s, key, j)
					if err := state.Update(s, "count", func(n int) int { return n + 1 }); err != nil {
						t.Error(err)
					}
					if _, err := state.Get[int](s, key); err != nil {
						t.Error(err)
					}
				}
				outliving.Go(func() { // started by the call: unbound
					for range 50 {
						state.Set(s, "free", 2)
						_, _ = state.Get[int](s, "count")
					}
				})
				return "", nil
			}, context.Background(), nil)
		})
	}
	running.Wait()
	for i, tx := range txs {
		if i%2 == 0 {
			tx.Close()
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
		} else {
			tx.Discard()
		}
		_ = tx.Len()
	}
	outliving.Wait()
	close(stop)
	readers.Wait()
	n, err := state.Get[int](s, "count")
	if err != nil || n != calls/2*50 {
		t.Errorf("count = %d, %v; want %d (the committed calls' updates only)", n, err, calls/2*50)
	}
	for i := range calls {
		v, err := state.Get[int](s, fmt.Sprintf("call%d", i))
		if i%2 == 0 && (err != nil || v != 49) {
			t.Errorf("call%d = %d, %v; want 49", i, v, err)
		}
		if i%2 == 1 && err == nil {
			t.Errorf("call%d = %d: a discarded call's change was applied", i, v)
		}
	}
}
