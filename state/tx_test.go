package state_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/state"
)

// bg is the context of code that runs outside any transaction.
var bg = context.Background()

func TestTxRecordsChangesMadeWithItsContext(t *testing.T) {
	s := state.New()
	require.NoError(t, state.Set(bg, s, "n", 1))
	tx := s.Begin()
	ctx := state.ContextWithTx(bg, tx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		require.NoError(t, state.Set(ctx, s, "n", 10))
		require.NoError(t, state.Update(ctx, s, "n", func(n int) int { return n + 5 }))
		got, err := state.Get[int](ctx, s, "n")
		assert.NoError(t, err)
		assert.Equal(t, 15, got, "a change made with the context reads its own changes")
		require.NoError(t, state.Set(ctx, s, "new", "x"))
		_, err = state.Get[string](ctx, s, "new")
		assert.NoError(t, err, "a key the transaction set is found")
	}()
	<-done
	got, err := state.Get[int](bg, s, "n")
	require.NoError(t, err)
	assert.Equal(t, 1, got, "changes wait for Commit")
	_, err = state.Get[string](bg, s, "new")
	assert.ErrorAs(t, err, new(*state.NotFoundError))
	assert.Equal(t, 3, tx.Len())

	tx.Close()
	require.NoError(t, state.Set(bg, s, "n", 100)) // a change made meanwhile by someone else
	require.NoError(t, tx.Commit())
	got, _ = state.Get[int](bg, s, "n")
	assert.Equal(t, 15, got, "a Set replaces, and the update applies to it")
	str, err := state.Get[string](bg, s, "new")
	require.NoError(t, err)
	assert.Equal(t, "x", str)
}

func TestTxUpdatesApplyToLiveValueAtCommit(t *testing.T) {
	s := state.New()
	require.NoError(t, state.Set(bg, s, "n", 0))
	txs := []*state.Tx{s.Begin(), s.Begin(), s.Begin()}
	var wg sync.WaitGroup
	for _, tx := range txs {
		wg.Go(func() {
			ctx := state.ContextWithTx(bg, tx)
			require.NoError(t, state.Update(ctx, s, "n", func(n int) int { return n*10 + 1 }))
		})
	}
	wg.Wait()
	for i := len(txs) - 1; i >= 0; i-- { // commit order decides, not timing
		require.NoError(t, txs[i].Commit())
	}
	got, _ := state.Get[int](bg, s, "n")
	assert.Equal(t, 111, got)
}

func TestTxDiscardAndClose(t *testing.T) {
	s := state.New()
	require.NoError(t, state.Set(bg, s, "n", 1))
	tx := s.Begin()
	ctx := state.ContextWithTx(bg, tx)
	step := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		assert.NoError(t, state.Set(ctx, s, "n", 2))
		step <- struct{}{}
		<-step // Close happened: this change is dropped
		assert.NoError(t, state.Set(ctx, s, "n", 3))
	}()
	<-step
	tx.Close()
	step <- struct{}{}
	<-finished
	require.NoError(t, tx.Commit())
	got, _ := state.Get[int](bg, s, "n")
	assert.Equal(t, 2, got, "changes after Close are dropped")

	tx = s.Begin()
	require.NoError(t, state.Set(state.ContextWithTx(bg, tx), s, "n", 9))
	tx.Discard()
	got, _ = state.Get[int](bg, s, "n")
	assert.Equal(t, 2, got)
	require.NoError(t, state.Set(bg, s, "n", 4)) // no transaction open: applied at once
	got, _ = state.Get[int](bg, s, "n")
	assert.Equal(t, 4, got)
}

func TestTxTypeMismatch(t *testing.T) {
	s := state.New()
	require.NoError(t, state.Set(bg, s, "n", 1))
	tx := s.Begin()
	ctx := state.ContextWithTx(bg, tx)
	err := state.Update(ctx, s, "n", func(v string) string { return v })
	var te *state.TypeError
	require.ErrorAs(t, err, &te, "a mismatch is reported to the caller at once")
	assert.Equal(t, "n", te.Key)
	require.NoError(t, state.Update(ctx, s, "n", func(n int) int { return n + 1 }))
	tx.Close()
	require.NoError(t, state.Set(bg, s, "n", "now a string"))
	err = tx.Commit()
	require.ErrorAs(t, err, &te, "an update that no longer fits at commit is reported")
	got, _ := state.Get[string](bg, s, "n")
	assert.Equal(t, "now a string", got)
}

// While a transaction is open, a change made with a context that carries
// none of the store's is refused with a *ContextError, whatever goroutine
// makes it, and changes nothing; once every transaction is closed, such a
// change applies at once again.
func TestChangeWithoutTheCallsContextIsRefused(t *testing.T) {
	s := state.New()
	set := state.NewSetter[int](s, "n")
	set.Set(bg, 1)
	tx := s.Begin()
	ctx := state.ContextWithTx(bg, tx)

	var ce *state.ContextError
	err := state.Set(bg, s, "n", 2)
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "n", ce.Key)
	assert.Equal(t, "Set", ce.Op)
	assert.ErrorIs(t, err, state.ErrNoTx)
	assert.EqualError(t, err, `state "n": Set: `+state.ErrNoTx.Error())
	require.ErrorAs(t, state.Update(bg, s, "n", func(n int) int { return n + 1 }), &ce)
	assert.Equal(t, "Update", ce.Op)
	require.ErrorAs(t, state.SetJSON(bg, s, "n", []byte("3")), &ce)
	assert.Equal(t, "SetJSON", ce.Op)
	done := make(chan any)
	go func() {
		defer func() { done <- recover() }()
		set.Update(context.TODO(), func(n int) int { return n + 1 }) // another goroutine, another context
	}()
	require.IsType(t, &ce, ptr(<-done))

	// A transaction of another store does not count.
	other := state.New().Begin()
	require.ErrorAs(t, state.Set(state.ContextWithTx(bg, other), s, "n", 4), &ce)

	// Reads are not refused: they see the live values.
	got, err := state.Get[int](bg, s, "n")
	require.NoError(t, err)
	assert.Equal(t, 1, got, "no refused change was applied")

	set.Set(ctx, 5) // the call's own context: recorded
	tx.Close()
	set.Set(bg, 6) // every transaction closed: applied at once
	require.NoError(t, tx.Commit())
	got, _ = set.Get(bg)
	assert.Equal(t, 5, got, "the call's change is applied at Commit, after the free one")
}

func ptr(v any) any {
	if ce, ok := v.(*state.ContextError); ok {
		return &ce
	}
	return v
}

// A context derived from a transaction's, and one carrying transactions of
// two stores (a sub-agent's tool call: its own store's and its parent
// call's), record each store's changes in that store's transaction; the
// innermost transaction of a store counts.
func TestContextCarriesOneTxPerStore(t *testing.T) {
	parent, child := state.New(), state.New()
	ptx, ctx1 := parent.Begin(), state.New().Begin()
	_ = ctx1
	pctx := state.ContextWithTx(bg, ptx)
	ctx, cancel := context.WithCancel(pctx) // derived
	defer cancel()
	ctx = context.WithValue(ctx, otherKey{}, 1)
	ctx2 := state.ContextWithTx(ctx, child.Begin())
	ctx3tx := child.Begin()
	ctx3 := state.ContextWithTx(ctx2, ctx3tx)

	require.NoError(t, state.Set(ctx3, parent, "p", 1))
	require.NoError(t, state.Set(ctx3, child, "c", 2))
	assert.Equal(t, 1, ptx.Len(), "the parent's change is in the parent call's transaction")
	assert.Equal(t, 1, ctx3tx.Len(), "the child's change is in the innermost child transaction")
	assert.Same(t, ptx, parent.TxFromContext(ctx3))
	assert.Nil(t, parent.TxFromContext(bg))
}

type otherKey struct{}

func BenchmarkSet(b *testing.B) {
	b.Run("free", func(b *testing.B) {
		s := state.New()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			_ = state.Set(bg, s, "n", i)
		}
	})
	b.Run("tx", func(b *testing.B) {
		s := state.New()
		tx := s.Begin()
		ctx := state.ContextWithTx(bg, tx)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			_ = state.Set(ctx, s, "n", i)
			if tx.Len() > 1000 {
				tx.Discard()
				tx = s.Begin()
				ctx = state.ContextWithTx(bg, tx)
			}
		}
	})
}

// A Set recorded in a transaction replaces the key at Commit, whatever it
// holds then, and is seen through the transaction's context before.
func TestTxSetWinsAtCommit(t *testing.T) {
	s := state.New()
	require.NoError(t, state.Set(bg, s, "n", 1))
	tx := s.Begin()
	ctx := state.ContextWithTx(bg, tx)
	require.NoError(t, state.Set(ctx, s, "n", 7))
	got, err := state.Get[int](ctx, s, "n")
	require.NoError(t, err)
	assert.Equal(t, 7, got)
	tx.Close()
	require.NoError(t, state.Set(bg, s, "n", 100))
	require.NoError(t, tx.Commit())
	got, err = state.Get[int](bg, s, "n")
	require.NoError(t, err)
	assert.Equal(t, 7, got)
	assert.Equal(t, 0, tx.Len())
}

// A tool call's transaction with one Set costs the Tx, its context and the
// new entry: the change is held in the Tx, and a Set records no function.
func TestTxOneSetAllocations(t *testing.T) {
	s := state.New()
	require.NoError(t, state.Set(bg, s, "n", 1))
	n := testing.AllocsPerRun(100, func() {
		tx := s.Begin()
		ctx := state.ContextWithTx(bg, tx)
		require.NoError(t, state.Set(ctx, s, "n", 2)) // a small int: boxing it does not allocate
		tx.Close()
		require.NoError(t, tx.Commit())
	})
	assert.LessOrEqual(t, n, 4.0)
}
