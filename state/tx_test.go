package state_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/state"
)

func TestTxRecordsBoundGoroutineOnly(t *testing.T) {
	s := state.New()
	state.Set(s, "n", 1)
	tx := s.Begin()
	done := make(chan struct{})
	go func() {
		defer close(done)
		tx.Bind()
		defer tx.Unbind()
		state.Set(s, "n", 10)
		require.NoError(t, state.Update(s, "n", func(n int) int { return n + 5 }))
		got, err := state.Get[int](s, "n")
		assert.NoError(t, err)
		assert.Equal(t, 15, got, "a bound goroutine reads its own changes")
		state.Set(s, "new", "x")
		_, err = state.Get[string](s, "new")
		assert.NoError(t, err, "a key the transaction set is found")
	}()
	<-done
	got, err := state.Get[int](s, "n")
	require.NoError(t, err)
	assert.Equal(t, 1, got, "changes wait for Commit")
	_, err = state.Get[string](s, "new")
	assert.ErrorAs(t, err, new(*state.NotFoundError))
	assert.Equal(t, 3, tx.Len())

	state.Set(s, "n", 100) // a change made meanwhile by someone else
	require.NoError(t, tx.Commit())
	got, _ = state.Get[int](s, "n")
	assert.Equal(t, 15, got, "a Set replaces, and the update applies to it")
	str, err := state.Get[string](s, "new")
	require.NoError(t, err)
	assert.Equal(t, "x", str)
}

func TestTxUpdatesApplyToLiveValueAtCommit(t *testing.T) {
	s := state.New()
	state.Set(s, "n", 0)
	txs := []*state.Tx{s.Begin(), s.Begin(), s.Begin()}
	var wg sync.WaitGroup
	for _, tx := range txs {
		wg.Go(func() {
			tx.Bind()
			defer tx.Unbind()
			require.NoError(t, state.Update(s, "n", func(n int) int { return n*10 + 1 }))
		})
	}
	wg.Wait()
	for i := len(txs) - 1; i >= 0; i-- { // commit order decides, not timing
		require.NoError(t, txs[i].Commit())
	}
	got, _ := state.Get[int](s, "n")
	assert.Equal(t, 111, got)
}

func TestTxDiscardAndClose(t *testing.T) {
	s := state.New()
	state.Set(s, "n", 1)
	tx := s.Begin()
	step := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tx.Bind()
		defer tx.Unbind()
		state.Set(s, "n", 2)
		step <- struct{}{}
		<-step // Close happened: this change is dropped
		state.Set(s, "n", 3)
	}()
	<-step
	tx.Close()
	step <- struct{}{}
	<-finished
	require.NoError(t, tx.Commit())
	got, _ := state.Get[int](s, "n")
	assert.Equal(t, 2, got, "changes after Close are dropped")

	tx = s.Begin()
	func() {
		tx.Bind()
		defer tx.Unbind()
		state.Set(s, "n", 9)
	}()
	tx.Discard()
	got, _ = state.Get[int](s, "n")
	assert.Equal(t, 2, got)
	state.Set(s, "n", 4) // unbound again: applied at once
	got, _ = state.Get[int](s, "n")
	assert.Equal(t, 4, got)
}

func TestTxTypeMismatch(t *testing.T) {
	s := state.New()
	state.Set(s, "n", 1)
	tx := s.Begin()
	func() {
		tx.Bind()
		defer tx.Unbind()
		err := state.Update(s, "n", func(v string) string { return v })
		var te *state.TypeError
		require.ErrorAs(t, err, &te, "a mismatch is reported to the caller at once")
		assert.Equal(t, "n", te.Key)
		require.NoError(t, state.Update(s, "n", func(n int) int { return n + 1 }))
	}()
	state.Set(s, "n", "now a string")
	err := tx.Commit()
	var te *state.TypeError
	require.ErrorAs(t, err, &te, "an update that no longer fits at commit is reported")
	got, _ := state.Get[string](s, "n")
	assert.Equal(t, "now a string", got)
}

func BenchmarkSetUnbound(b *testing.B) {
	s := state.New()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		state.Set(s, "n", i)
	}
}

func BenchmarkSetBound(b *testing.B) {
	s := state.New()
	tx := s.Begin()
	tx.Bind()
	defer tx.Unbind()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		state.Set(s, "n", i)
	}
}

// TestRunRecordsTheCallersChangesOnly checks Run, which finds its changes
// by the frame of the call: the calling goroutine's changes are recorded,
// also deep in its stack; those of a goroutine it starts, and of others,
// apply at once; a second Run under way at the same time records its own.
func TestRunRecordsTheCallersChangesOnly(t *testing.T) {
	s := state.New()
	state.Set(s, "a", 0)
	tx := s.Begin()
	var deep func(n int)
	deep = func(n int) {
		if n == 0 {
			require.NoError(t, state.Update(s, "a", func(v int) int { return v + 1 }))
			return
		}
		deep(n - 1)
	}
	out, err := tx.Run(func(ctx context.Context, args json.RawMessage) (string, error) {
		state.Set(s, "shallow", "x")
		deep(200) // past the 64 frames Callers reads at once
		v, err := state.Get[int](s, "a")
		require.NoError(t, err)
		assert.Equal(t, 1, v, "the call sees its own change")
		done := make(chan struct{})
		go func() { state.Set(s, "spawned", true); close(done) }()
		<-done
		// A second Run at the same time, on another goroutine.
		other := s.Begin()
		done2 := make(chan struct{})
		go func() {
			_, _ = other.Run(func(context.Context, json.RawMessage) (string, error) {
				state.Set(s, "other", 2)
				return "", nil
			}, ctx, nil)
			close(done2)
		}()
		<-done2
		assert.Equal(t, 1, other.Len(), "the concurrent Run recorded its own change")
		other.Discard()
		return string(args), nil
	}, context.Background(), json.RawMessage(`"in"`))
	require.NoError(t, err)
	assert.Equal(t, `"in"`, out)

	assert.Equal(t, 2, tx.Len())
	_, err = state.Get[string](s, "shallow")
	assert.Error(t, err, "not applied before Commit")
	v, _ := state.Get[int](s, "a")
	assert.Equal(t, 0, v)
	spawned, err := state.Get[bool](s, "spawned")
	require.NoError(t, err, "a goroutine the call started is not bound")
	assert.True(t, spawned)
	_, err = state.Get[int](s, "other")
	assert.Error(t, err, "the other Run's change was discarded")

	require.NoError(t, tx.Commit())
	v, _ = state.Get[int](s, "a")
	assert.Equal(t, 1, v)
}

// TestRunUnbindsOnPanic checks that a panic in the call leaves the store
// unbound: a later change applies at once.
func TestRunUnbindsOnPanic(t *testing.T) {
	s := state.New()
	tx := s.Begin()
	assert.Panics(t, func() {
		_, _ = tx.Run(func(context.Context, json.RawMessage) (string, error) { panic("boom") }, context.Background(), nil)
	})
	state.Set(s, "k", 1)
	v, err := state.Get[int](s, "k")
	require.NoError(t, err)
	assert.Equal(t, 1, v)
	assert.Equal(t, 0, tx.Len())
}

// A Set recorded in a transaction replaces the key at Commit, whatever it
// holds then, and is seen by the bound goroutine before.
func TestTxSetWinsAtCommit(t *testing.T) {
	s := state.New()
	state.Set(s, "n", 1)
	tx := s.Begin()
	_, err := tx.Run(func(context.Context, json.RawMessage) (string, error) {
		state.Set(s, "n", 7)
		got, err := state.Get[int](s, "n")
		assert.NoError(t, err)
		assert.Equal(t, 7, got)
		return "", nil
	}, context.Background(), nil)
	require.NoError(t, err)
	state.Set(s, "n", 100)
	require.NoError(t, tx.Commit())
	got, err := state.Get[int](s, "n")
	require.NoError(t, err)
	assert.Equal(t, 7, got)
	assert.Equal(t, 0, tx.Len())
}

// A tool call's transaction with one Set costs the Tx and the new entry:
// the change is held in the Tx, and a Set records no function.
func TestTxOneSetAllocations(t *testing.T) {
	s := state.New()
	state.Set(s, "n", 1)
	f := func(context.Context, json.RawMessage) (string, error) {
		state.Set(s, "n", 2) // a small int: boxing it does not allocate
		return "", nil
	}
	ctx := context.Background()
	n := testing.AllocsPerRun(100, func() {
		tx := s.Begin()
		if _, err := tx.Run(f, ctx, nil); err != nil {
			t.Fatal(err)
		}
		tx.Close()
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	})
	assert.LessOrEqual(t, n, 2.0)
}
