package state

import (
	"context"
	"errors"
	"fmt"
)

// Tx collects state changes so that they can be applied later, all at once,
// or dropped. The runtime gives each tool call its own transaction: the
// calls of one reply run concurrently, and their changes are applied in
// call order when they finish, whatever order they finish in, and become
// durable together with their results.
//
// A transaction travels in a context (ContextWithTx): Get, Set, Update and
// SetJSON given a context that carries a transaction of their store record
// their changes in it instead of applying them, and Get sees the live
// values with the transaction's changes applied. The runtime passes a tool
// its call's context, so a tool changes state with the ctx it was given:
//
//	setCount.Update(ctx, func(n int) int { return n + 1 })
//
// A goroutine a tool starts may use the call's context as well: its
// changes join the call's transaction while the call runs, and are dropped
// once the call has returned (the transaction is closed).
//
// While a transaction is open (begun and not yet closed), its store refuses
// changes made with a context that carries no transaction of its own:
// they would bypass the calls' order. Such a change is a *ContextError,
// whichever goroutine makes it.
//
// A Tx is safe for concurrent use; it ends with Commit or Discard.
type Tx struct {
	s      *Store
	ops    []op
	closed bool
	// op0 holds the first change, as a call of a tool often makes one.
	op0 [1]op
}

// op is one recorded change: apply makes the new entry from the previous
// one; out is what it made from in when it was recorded, reused at commit
// if the key still holds in. A nil apply (a Set) makes out from any entry.
type op struct {
	key     string
	apply   func(prev *entry) (*entry, error)
	in, out *entry
}

// on returns the entry o makes from prev, running apply again only if prev
// is not the entry o was recorded on.
func (o *op) on(prev *entry) (*entry, error) {
	if prev == o.in || o.apply == nil {
		return o.out, nil
	}
	return o.apply(prev)
}

// Begin returns a new, open transaction on s. Until it is closed (Close,
// Commit or Discard), s refuses changes made without a transaction of its
// own in their context (see Tx).
func (s *Store) Begin() *Tx {
	s.open.Add(1)
	return &Tx{s: s}
}

// txLink is what ContextWithTx puts in a context: a transaction and those
// of the contexts it was derived from, one per store at most in practice (a
// sub-agent's tool call carries its own store's and its parent call's).
type txLink struct {
	tx *Tx
	up *txLink
}

type txKey struct{}

// ContextWithTx returns a copy of ctx that carries tx: the changes made
// with it (or a context derived from it) to tx's store are recorded in tx.
// A context may carry transactions of several stores; for each store, the
// one added last counts.
func ContextWithTx(ctx context.Context, tx *Tx) context.Context {
	up, _ := ctx.Value(txKey{}).(*txLink)
	return context.WithValue(ctx, txKey{}, &txLink{tx: tx, up: up})
}

// TxFromContext returns the transaction of s that ctx carries, or nil.
func (s *Store) TxFromContext(ctx context.Context) *Tx {
	if ctx == nil {
		return nil
	}
	l, _ := ctx.Value(txKey{}).(*txLink)
	for ; l != nil; l = l.up {
		if l.tx.s == s {
			return l.tx
		}
	}
	return nil
}

// ErrNoTx is wrapped by a *ContextError: a change was made while the
// store's transactions were open, with a context that carries none of them.
var ErrNoTx = errors.New("state changed without the tool call's context while tool calls run; pass the ctx the tool was given")

// ContextError is a change refused because the context it was made with
// does not carry a transaction of the store while transactions are open:
// typically a tool that calls a setter with context.Background(), or a
// goroutine that is not part of the call. The change is not made.
type ContextError struct {
	Key string
	Op  string // "Set", "Update" or "SetJSON"
	Err error  // ErrNoTx
}

func (e *ContextError) Error() string {
	return fmt.Sprintf("state %q: %s: %v", e.Key, e.Op, e.Err)
}

func (e *ContextError) Unwrap() error { return e.Err }

// target returns the transaction a change of key made with ctx goes to
// (nil: the live values), or a *ContextError when the store has open
// transactions and ctx carries none of them.
func (s *Store) target(ctx context.Context, op, key string) (*Tx, error) {
	tx := s.TxFromContext(ctx)
	if tx == nil && s.open.Load() > 0 {
		return nil, &ContextError{Key: key, Op: op, Err: ErrNoTx}
	}
	return tx, nil
}

// Close stops recording: changes made with tx from now on are dropped (a
// tool, or a goroutine it started, still running after its call returned or
// timed out). The changes recorded so far wait for Commit or Discard.
func (tx *Tx) Close() {
	tx.s.mu.Lock()
	tx.close()
	tx.s.mu.Unlock()
}

// close marks tx closed; it must be called with tx.s.mu held.
func (tx *Tx) close() {
	if !tx.closed {
		tx.closed = true
		tx.s.open.Add(-1)
	}
}

// Len returns the number of changes recorded.
func (tx *Tx) Len() int {
	tx.s.mu.Lock()
	defer tx.s.mu.Unlock()
	return len(tx.ops)
}

// Commit applies the recorded changes to the store's live values, in the
// order they were made, and closes tx. An update whose key was changed by
// someone else since it was recorded runs again on the new value. An update
// that finds the key holding another type is skipped; the first such error
// is returned, and the other changes are applied.
func (tx *Tx) Commit() error {
	s := tx.s
	s.mu.Lock()
	defer s.mu.Unlock()
	var first error
	for i := range tx.ops {
		o := &tx.ops[i]
		e, err := o.on(s.vals[o.key])
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		s.vals[o.key] = e
		s.version++
	}
	tx.ops, tx.op0 = nil, [1]op{}
	tx.close()
	return first
}

// Discard drops the recorded changes and closes tx.
func (tx *Tx) Discard() {
	tx.s.mu.Lock()
	tx.ops, tx.op0 = nil, [1]op{}
	tx.close()
	tx.s.mu.Unlock()
}

// record adds a change. It must be called with s.mu held.
func (tx *Tx) record(key string, apply func(*entry) (*entry, error), in, out *entry) {
	if !tx.closed {
		if tx.ops == nil {
			tx.ops = tx.op0[:0]
		}
		tx.ops = append(tx.ops, op{key: key, apply: apply, in: in, out: out})
	}
}

// overlay returns the entry of key with the recorded changes applied to e
// (nil: not set). It must be called with s.mu held.
func (tx *Tx) overlay(key string, e *entry) (*entry, error) {
	for i := range tx.ops {
		o := &tx.ops[i]
		if o.key != key {
			continue
		}
		var err error
		if e, err = o.on(e); err != nil {
			return nil, err
		}
	}
	return e, nil
}
