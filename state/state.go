// Package state is the typed, serializable key-value store behind a prompt's
// State hooks.
//
// Values are held as Go values while a run is live and as JSON when they come
// back from a checkpoint; a typed read decodes a JSON value into the type it is
// asked for, once. Package state depends on the standard library only.
package state

import (
	"context"
	"encoding"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
)

// Store holds state values by key. The zero Store is not usable; call New.
// A Store is safe for concurrent use.
type Store struct {
	mu   sync.Mutex
	vals map[string]*entry
	// version counts changes, so a caller can tell cheaply whether anything
	// changed since it last looked.
	version uint64
	// open counts the transactions begun and not yet closed (see Tx).
	open atomic.Int32
	// keys are the keys in sorted order, as MarshalJSON last wrote them;
	// stale when their number is not that of vals (keys are never deleted,
	// but by UnmarshalJSON, which clears them).
	keys []jsonKey
}

type entry struct {
	v   any             // live value, or nil when only raw is known
	raw json.RawMessage // value restored from a checkpoint, not yet decoded
	typ reflect.Type    // type of v; nil while only raw is known
}

// New returns an empty store.
func New() *Store { return &Store{vals: make(map[string]*entry)} }

// TypeError reports a key read or written as another type than the one it
// holds.
type TypeError struct {
	Key  string
	Have string // type the key holds
	Want string // type it was asked for
	Err  error  // decoding error, for values restored from JSON
}

func (e *TypeError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("state %q: stored value cannot be read as %s: %v", e.Key, e.Want, e.Err)
	}
	return fmt.Sprintf("state %q holds %s, not %s", e.Key, e.Have, e.Want)
}

func (e *TypeError) Unwrap() error { return e.Err }

// NotFoundError reports a key that holds no value.
type NotFoundError struct{ Key string }

func (e *NotFoundError) Error() string { return fmt.Sprintf("state %q is not set", e.Key) }

func typeName(t reflect.Type) string {
	if t == nil {
		return "nil"
	}
	return t.String()
}

// typed returns the value of e as T, decoding a restored JSON value on first
// use. It must be called with s.mu held.
func typed[T any](key string, e *entry) (T, error) {
	var zero T
	want := reflect.TypeFor[T]()
	if e.typ == nil && e.raw != nil {
		var v T
		if err := json.Unmarshal(e.raw, &v); err != nil {
			return zero, &TypeError{Key: key, Have: "JSON " + abbreviate(e.raw), Want: typeName(want), Err: err}
		}
		e.v, e.typ, e.raw = v, want, nil
		return v, nil
	}
	if e.typ != want {
		return zero, &TypeError{Key: key, Have: typeName(e.typ), Want: typeName(want)}
	}
	if e.v == nil {
		return zero, nil
	}
	return e.v.(T), nil
}

func abbreviate(raw []byte) string {
	if len(raw) > 40 {
		return string(raw[:37]) + "..."
	}
	return string(raw)
}

// Init stores initial under key if the key is new, and returns the value the
// key holds. It returns a *TypeError if the key holds another type.
func Init[T any](s *Store, key string, initial T) (T, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.vals[key]
	if !ok {
		s.vals[key] = &entry{v: initial, typ: reflect.TypeFor[T]()}
		s.version++
		return initial, nil
	}
	return typed[T](key, e)
}

// Get returns the live value of key as T. It returns a *NotFoundError if the
// key is not set and a *TypeError if it holds another type.
//
// When ctx carries a transaction of s (see Tx), it returns the value with
// the transaction's own changes applied.
func Get[T any](ctx context.Context, s *Store, key string) (T, error) {
	tx := s.TxFromContext(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.vals[key]
	if tx != nil {
		var err error
		if e, err = tx.overlay(key, e); err != nil {
			var zero T
			return zero, err
		}
		ok = e != nil
	}
	if !ok {
		var zero T
		return zero, &NotFoundError{Key: key}
	}
	return typed[T](key, e)
}

// Set stores v under key, whatever the key held before. When ctx carries a
// transaction of s, it records the change in the transaction instead. It
// returns a *ContextError, and changes nothing, when s has open
// transactions and ctx carries none of them (see Tx).
func Set[T any](ctx context.Context, s *Store, key string, v T) error {
	tx, err := s.target(ctx, "Set", key)
	if err != nil {
		return err
	}
	e := &entry{v: v, typ: reflect.TypeFor[T]()}
	s.mu.Lock()
	defer s.mu.Unlock()
	if tx != nil {
		tx.record(key, nil, nil, e) // no apply: e whatever the key holds
		return nil
	}
	s.vals[key] = e
	s.version++
	return nil
}

// Update applies f to the live value of key and stores the result. Updates
// apply in call order; f runs with the store locked, so it must not use the
// store. A key that is not set is updated from T's zero value. It returns a
// *TypeError if the key holds another type, and a *ContextError, changing
// nothing, when s has open transactions and ctx carries none of them.
//
// When ctx carries a transaction of s (see Tx), f runs at once on the live
// value with the transaction's changes, and its result is
// recorded; if another transaction changed the key before this one is
// committed, f runs again on the new value then. So f may run more than
// once, as React's state updaters may: it must be a pure function of its
// argument (setting a flag the caller reads afterwards is fine).
func Update[T any](ctx context.Context, s *Store, key string, f func(prev T) T) error {
	tx, err := s.target(ctx, "Update", key)
	if err != nil {
		return err
	}
	typ := reflect.TypeFor[T]()
	update := func(e *entry) (*entry, error) {
		var prev T
		if e != nil {
			var err error
			if prev, err = typed[T](key, e); err != nil {
				return nil, err
			}
		}
		return &entry{v: f(prev), typ: typ}, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.vals[key]
	if tx != nil {
		var err error
		if in, err = tx.overlay(key, in); err != nil {
			return err
		}
	}
	out, err := update(in)
	if err != nil {
		return err
	}
	if tx != nil {
		tx.record(key, update, in, out)
		return nil
	}
	s.vals[key] = out
	s.version++
	return nil
}

// Setter sets one key of a store. It is what a State hook returns beside the
// value. The zero Setter panics when used. A Setter is safe for concurrent use.
//
// Its methods take the context of the code that calls them: a tool's ctx,
// an effect's ctx, or the prompt function's (prompt.Prompt.Context). The
// context is how a change made by a tool call joins the call's transaction
// (see Tx).
type Setter[T any] struct {
	s   *Store
	key string
}

// NewSetter returns a setter for key.
func NewSetter[T any](s *Store, key string) Setter[T] { return Setter[T]{s: s, key: key} }

// Key returns the key the setter writes.
func (st Setter[T]) Key() string { return st.key }

// Set stores v. The new value is visible at once to Get and to the prompt
// function at its next execution; made with a tool call's context, it is
// applied when the call's changes are (see Tx). Setting state never
// triggers a step. It panics with a *ContextError if ctx lacks the tool
// call's transaction while tool calls run: a programmer error, with which
// the runtime ends the run.
func (st Setter[T]) Set(ctx context.Context, v T) {
	if err := Set(ctx, st.s, st.key, v); err != nil {
		panic(err)
	}
}

// Update stores f(live value). Updates apply in call order, each to the
// result of the previous one. It panics with a *TypeError if another hook
// stored a different type under the same key since this setter was made,
// and with a *ContextError as Set does.
func (st Setter[T]) Update(ctx context.Context, f func(prev T) T) {
	if err := Update(ctx, st.s, st.key, f); err != nil {
		panic(err)
	}
}

// Get returns the live value, with the changes of the transaction ctx
// carries applied (see Tx).
func (st Setter[T]) Get(ctx context.Context) (T, error) { return Get[T](ctx, st.s, st.key) }

// Version returns a number that changes whenever a value is stored.
func (s *Store) Version() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version
}

// Keys returns the keys in sorted order.
func (s *Store) Keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.vals))
}

// Len returns the number of keys.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.vals)
}

// Snapshot returns a shallow copy of the values by key. Values restored from
// a checkpoint and not read since are returned as json.RawMessage.
func (s *Store) Snapshot() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]any, len(s.vals))
	for k, e := range s.vals {
		if e.typ == nil && e.raw != nil {
			out[k] = e.raw
		} else {
			out[k] = e.v
		}
	}
	return out
}

// MarshalJSON encodes the store as a JSON object with sorted keys. It fails,
// naming the key, when a value cannot be encoded: state must be serializable
// so that a session can be checkpointed.
//
// The values are encoded with the store locked, so that a setter running
// concurrently (a tool) cannot change a value while it is read. An updater
// must still not modify the previous value in place: values handed out by
// State and Get are shared, and a map or slice changed in place would be
// changed for every holder.
//
// It writes what encoding/json writes for a map[string]json.RawMessage of
// the values' JSON, byte for byte (keys sorted and escaped as it escapes
// them, values compact), without encoding again the keys, nor the values
// that cannot have changed since the last call (see jsonKey): a run with a
// session store calls it at every checkpoint.
func (s *Store) MarshalJSON() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.keys) != len(s.vals) {
		s.keys = s.keys[:0]
		for _, k := range slices.Sorted(maps.Keys(s.vals)) {
			kj, err := json.Marshal(k)
			if err != nil {
				return nil, err // a string always encodes
			}
			s.keys = append(s.keys, jsonKey{key: k, json: kj})
		}
	}
	n := 2
	for i := range s.keys {
		k := &s.keys[i]
		e := s.vals[k.key]
		if k.e != e || k.raw != (e.typ == nil) {
			enc, err := e.json()
			if err != nil {
				return nil, fmt.Errorf("state %q is not serializable: %w", k.key, err)
			}
			k.e, k.raw, k.enc = e, e.typ == nil, enc
			k.keep = k.raw || fixedJSON(e.typ)
		}
		n += len(k.json) + len(k.enc) + 2
	}
	out := make([]byte, 0, n)
	out = append(out, '{')
	for i := range s.keys {
		k := &s.keys[i]
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, k.json...)
		out = append(out, ':')
		out = append(out, k.enc...)
		if !k.keep {
			k.e, k.enc = nil, nil // encoded again next time: it may change
		}
	}
	return append(out, '}'), nil
}

// jsonKey is a key, its JSON and the JSON of its value, enc, made from the
// entry e (raw when e held only raw JSON then). enc is kept (keep) when e
// cannot change: entries are replaced, not modified, when their key is
// set, but for the first typed read of a raw one (which a different raw
// tells), and the value of a type holding no references (see fixedJSON)
// cannot change either.
type jsonKey struct {
	key  string
	json []byte
	e    *entry
	raw  bool
	keep bool
	enc  []byte
}

// json returns e's value as MarshalJSON writes it: raw as encoding/json
// writes a json.RawMessage (compact, HTML characters escaped), the value
// as json.Marshal writes it.
func (e *entry) json() ([]byte, error) {
	if e.typ == nil && e.raw != nil {
		return json.Marshal(e.raw)
	}
	return json.Marshal(e.v)
}

var fixedTypes sync.Map // reflect.Type → bool

// fixedJSON reports whether the JSON of a value of type t depends on the
// value alone, which a stored value cannot change: a boolean, number or
// string, or an array or struct of those, without a JSON or text encoding
// of its own.
func fixedJSON(t reflect.Type) bool {
	if t == nil {
		return false
	}
	if v, ok := fixedTypes.Load(t); ok {
		return v.(bool)
	}
	fixed := fixedKind(t, 0)
	fixedTypes.Store(t, fixed)
	return fixed
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

func fixedKind(t reflect.Type, depth int) bool {
	if depth > 8 || t.Implements(jsonMarshaler) || t.Implements(textMarshaler) ||
		reflect.PointerTo(t).Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(textMarshaler) {
		return false
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.String:
		return true
	case reflect.Array:
		return fixedKind(t.Elem(), depth+1)
	case reflect.Struct:
		for i := range t.NumField() {
			if !fixedKind(t.Field(i).Type, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

// UnmarshalJSON replaces the store's contents with the object in data. Each
// value is kept as JSON until it is first read as a type.
func (s *Store) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return fmt.Errorf("state store: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.vals == nil {
		s.vals = make(map[string]*entry, len(raw))
	}
	clear(s.vals)
	s.keys = nil
	for k, r := range raw {
		s.vals[k] = &entry{raw: r}
	}
	s.version++
	return nil
}
