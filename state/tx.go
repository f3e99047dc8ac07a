package state

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"runtime"
	"strconv"
	"sync/atomic"

	"github.com/reprompt/reprompt/internal/callsite"
)

// Tx collects the state changes made by one goroutine so that they can be
// applied later, all at once, or dropped. The runtime gives each tool call
// its own transaction: the calls of one reply run concurrently, and their
// changes are applied in call order when they finish, whatever order they
// finish in, and become durable together with their results.
//
// While a goroutine is bound to a transaction (Bind), the Set and Update it
// makes through the store are recorded in the transaction instead of being
// applied, and the Get it makes sees the live values with the
// transaction's changes applied. Other goroutines, and goroutines the bound
// one starts, use the live values as usual.
//
// A Tx is safe for concurrent use; it ends with Commit or Discard.
type Tx struct {
	s      *Store
	ops    []op
	closed bool
	g      uint64 // the goroutine bound to it, or 0
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

// Begin returns a new, unbound transaction on s.
func (s *Store) Begin() *Tx { return &Tx{s: s} }

// Bind records the changes the calling goroutine makes through the store in
// tx until Unbind. Changes made after Close, Commit or Discard are dropped.
// A transaction is bound to one goroutine at a time.
func (tx *Tx) Bind() {
	id := goid()
	s := tx.s
	s.mu.Lock()
	if s.txs == nil {
		s.txs = make(map[uint64]*Tx)
	}
	s.txs[id] = tx
	tx.g = id
	s.bound.Add(1)
	s.mu.Unlock()
}

// Run calls f(ctx, args) on the calling goroutine bound to tx, as Bind and
// Unbind around the call would, and returns what f returns: the changes f
// makes through the store on this goroutine are recorded in tx; those made
// by goroutines f starts are not. A panic in f unbinds tx and goes on.
//
// Run costs less than Bind: the store finds a change made under Run by the
// frame of Run on the stack instead of reading the goroutine's id, which
// costs microseconds. One Run per store is found that way at a time; a Run
// that starts while another is under way on the same store is bound by
// goroutine id, as Bind does. Unlike Bind, Run may bind one transaction to
// several goroutines at once: the runtime runs each tool call of a
// sub-agent under the transaction of the parent's call too, so that the
// sub-agent's changes to the parent's state are recorded in the parent
// call's transaction. A goroutine f starts that is itself under a Run, of
// any store, and is bound to no transaction of this store, counts as under
// the Run found by its frame: its changes to this store are recorded in
// that Run's transaction.
func (tx *Tx) Run(f func(context.Context, json.RawMessage) (string, error), ctx context.Context, args json.RawMessage) (string, error) {
	s := tx.s
	s.mu.Lock()
	byFrame := s.framed == nil
	if byFrame {
		s.framed = tx
		s.bound.Add(1)
	}
	s.mu.Unlock()
	if !byFrame {
		// Bound by id, but not through Bind, which binds one goroutine at
		// a time: the tool calls of a sub-agent run their parent call's
		// transaction on goroutines of their own, concurrently.
		id := goid()
		s.mu.Lock()
		if s.txs == nil {
			s.txs = make(map[uint64]*Tx)
		}
		prev := s.txs[id]
		s.txs[id] = tx
		s.bound.Add(1)
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			if prev != nil {
				s.txs[id] = prev
			} else {
				delete(s.txs, id)
			}
			s.bound.Add(-1)
			s.mu.Unlock()
		}()
		return runFramed(f, ctx, args)
	}
	defer func() {
		s.mu.Lock()
		s.framed = nil
		s.bound.Add(-1)
		s.mu.Unlock()
	}()
	return runFramed(f, ctx, args)
}

// runFramed calls f: its frame on the stack is how the store recognises a
// change made under Run (see inRun). It must not be inlined.
//
//go:noinline
func runFramed(f func(context.Context, json.RawMessage) (string, error), ctx context.Context, args json.RawMessage) (string, error) {
	return f(ctx, args)
}

// framePC is the return address of the call of f in runFramed: runFramed
// calls f from one place, so this is the program counter of its frame on
// every stack under Run. It is learnt, through FuncForPC, the first time
// such a frame is found; after that, finding one compares integers.
var framePC atomic.Uintptr

// runFramedEntry is the entry of runFramed.
var runFramedEntry = runtime.FuncForPC(reflect.ValueOf(runFramed).Pointer()).Entry()

// inRun reports whether the calling goroutine is inside runFramed: in the
// call of f of a Run. Once framePC is known, a walk of the frame pointers
// finds it (see callsite.OnStack); where that walk cannot tell, and to
// learn framePC, runtime.Callers reads the stack.
func inRun() bool {
	known := framePC.Load()
	if known != 0 {
		if found, ok := callsite.OnStack(known); ok {
			return found
		}
	}
	var pcs [64]uintptr
	// The frame is usually a few frames up (Set, the tool's code, the
	// tool's wrapper): walk 8 frames first, then the rest 64 at a time.
	for skip, size := 3, 8; ; skip, size = skip+size, len(pcs) {
		n := runtime.Callers(skip, pcs[:size])
		for _, pc := range pcs[:n] {
			if pc == known {
				return true
			}
			if known == 0 {
				if f := runtime.FuncForPC(pc - 1); f != nil && f.Entry() == runFramedEntry {
					framePC.Store(pc)
					return true
				}
			}
		}
		if n < size {
			return false
		}
	}
}

// Unbind ends Bind: the goroutine's changes apply to the live values again.
func (tx *Tx) Unbind() {
	s := tx.s
	s.mu.Lock()
	if tx.g != 0 && s.txs[tx.g] == tx {
		delete(s.txs, tx.g)
		s.bound.Add(-1)
	}
	tx.g = 0
	s.mu.Unlock()
}

// Close stops recording: changes the bound goroutine makes from now on are
// dropped (a tool that went on running after its call timed out). The
// changes recorded so far wait for Commit or Discard.
func (tx *Tx) Close() {
	tx.s.mu.Lock()
	tx.closed = true
	tx.s.mu.Unlock()
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
	tx.ops, tx.op0, tx.closed = nil, [1]op{}, true
	return first
}

// Discard drops the recorded changes and closes tx.
func (tx *Tx) Discard() {
	tx.s.mu.Lock()
	tx.ops, tx.op0, tx.closed = nil, [1]op{}, true
	tx.s.mu.Unlock()
}

// current returns the transaction the calling goroutine is bound to, or nil.
// It looks the goroutine up only while some transaction is bound: by id
// while a transaction is bound by id (Bind), then by the frame of Run.
func (s *Store) current() *Tx {
	if s.bound.Load() == 0 {
		return nil
	}
	s.mu.Lock()
	byID, framed := len(s.txs) > 0, s.framed
	s.mu.Unlock()
	if byID {
		id := goid()
		s.mu.Lock()
		tx := s.txs[id]
		s.mu.Unlock()
		if tx != nil {
			return tx
		}
	}
	if framed != nil && inRun() {
		return framed
	}
	return nil
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

// goid returns the id of the calling goroutine, read from the first line of
// its stack trace ("goroutine 42 [running]:"). The runtime does not export
// it; the trace's format has been stable since Go 1.
func goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	var id uint64
	n := 0
	for ; n < len(b) && '0' <= b[n] && b[n] <= '9'; n++ {
		id = id*10 + uint64(b[n]-'0')
	}
	if n == 0 || n >= len(b) || b[n] != ' ' {
		panic("state: cannot read the goroutine id from " + strconv.Quote(string(buf[:])))
	}
	return id
}
