package state_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/state"
)

// Transactions used on parallel goroutines, goroutines they start with the
// call's context (some still writing after their call returned), and
// goroutines without a transaction that read the store, encode and copy it
// while the transactions are committed or discarded: under -race, nothing
// races, the committed changes are all there, and every change made
// without a transaction while transactions were open was refused.
func TestStoreUnderConcurrentUse(t *testing.T) {
	s := state.New()
	require.NoError(t, state.Set(bg, s, "count", 0))
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
				_, err := s.MarshalJSON()
				assert.NoError(t, err)
				_ = s.Snapshot()
				_, _ = s.Keys(), s.Version()
				_, _ = state.Get[int](bg, s, "count")
			}
		})
	}
	var running, outliving sync.WaitGroup
	for i, tx := range txs {
		running.Go(func() {
			ctx := state.ContextWithTx(bg, tx)
			key := fmt.Sprintf("call%d", i)
			for j := range 50 {
				assert.NoError(t, state.Set(ctx, s, key, j))
				assert.NoError(t, state.Update(ctx, s, "count", func(n int) int { return n + 1 }))
				_, err := state.Get[int](ctx, s, key)
				assert.NoError(t, err)
				assert.ErrorAs(t, state.Set(bg, s, "free", 1), new(*state.ContextError), "no transaction: refused while calls run")
			}
			outliving.Go(func() { // started by the call, with its context
				for range 50 {
					assert.NoError(t, state.Set(ctx, s, "late", 2))
					_, _ = state.Get[int](ctx, s, "count")
				}
			})
		})
	}
	running.Wait()
	for i, tx := range txs {
		if i%2 == 0 {
			tx.Close()
			require.NoError(t, tx.Commit())
		} else {
			tx.Discard()
		}
		_ = tx.Len()
	}
	outliving.Wait()
	close(stop)
	readers.Wait()
	n, err := state.Get[int](bg, s, "count")
	require.NoError(t, err)
	assert.Equal(t, calls/2*50, n, "the committed calls' updates only")
	for i := range calls {
		v, err := state.Get[int](bg, s, fmt.Sprintf("call%d", i))
		if i%2 == 0 {
			require.NoError(t, err)
			assert.Equal(t, 49, v)
		} else {
			assert.Error(t, err, "call%d: a discarded call's change was applied", i)
		}
	}
	_, err = state.Get[int](bg, s, "free")
	assert.Error(t, err, "a change without a transaction was applied while calls ran")
	require.NoError(t, state.Set(bg, s, "free", 1), "all closed: applied at once")
}
