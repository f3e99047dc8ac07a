package state_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/state"
)

func TestInitStoresOnlyWhenNew(t *testing.T) {
	s := state.New()
	got, err := state.Init(s, "count", 10)
	require.NoError(t, err, "first Init")
	require.Equal(t, 10, got, "first Init")
	state.Set(bg, s, "count", 42)
	got, err = state.Init(s, "count", 10)
	require.NoError(t, err, "second Init")
	require.Equal(t, 42, got, "second Init returns the stored value (initial must be ignored)")
	assert.Equal(t, 1, s.Len(), "Len")
}

func TestSetAndUpdateApplyInCallOrder(t *testing.T) {
	s := state.New()
	_, err := state.Init(s, "n", 0)
	require.NoError(t, err)
	set := state.NewSetter[int](s, "n")
	set.Set(bg, 10)
	set.Update(bg, func(n int) int { return n + 5 })
	set.Update(bg, func(n int) int { return n * 2 })
	got, err := state.Get[int](bg, s, "n")
	require.NoError(t, err)
	assert.Equal(t, 30, got, "10, +5, ×2")
	assert.Equal(t, "n", set.Key(), "Key()")
}

func TestUpdateUnsetKeyStartsFromZero(t *testing.T) {
	s := state.New()
	require.NoError(t, state.Update(bg, s, "fresh", func(n int) int { return n + 1 }))
	got, _ := state.Get[int](bg, s, "fresh")
	assert.Equal(t, 1, got, "zero value + 1")
}

func TestVersionChangesOnEveryStore(t *testing.T) {
	s := state.New()
	v0 := s.Version()
	state.Set(bg, s, "a", 1)
	v1 := s.Version()
	_, _ = state.Get[int](bg, s, "a")
	assert.Equal(t, v1, s.Version(), "a read changed the version")
	require.NoError(t, state.Update(bg, s, "a", func(n int) int { return n }))
	assert.Less(t, v0, v1, "version after the Set is not above the initial one")
	assert.Less(t, v1, s.Version(), "version after the Update is not above the one after the Set")
}

func TestTypeMismatchNamesBothTypes(t *testing.T) {
	s := state.New()
	state.Set(bg, s, "count", 3)

	tests := []struct {
		name string
		op   func() error
	}{
		{"Get", func() error { _, err := state.Get[string](bg, s, "count"); return err }},
		{"Init", func() error { _, err := state.Init(s, "count", "x"); return err }},
		{"Update", func() error {
			return state.Update(bg, s, "count", func(v string) string { return v })
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.op()
			var te *state.TypeError
			require.ErrorAs(t, err, &te)
			want := &state.TypeError{Key: "count", Have: "int", Want: "string"}
			assert.Empty(t, cmp.Diff(want, te), "TypeError mismatch (-want +got)")
			// The message is the contract here: it names the key and both
			// types (the one test of TypeError's text).
			for _, s := range []string{`"count"`, "int", "string"} {
				assert.Contains(t, err.Error(), s, "the error does not name %s", s)
			}
		})
	}
	got, _ := state.Get[int](bg, s, "count")
	assert.Equal(t, 3, got, "a failed Update changed the value")
}

func TestSetterUpdatePanicsOnTypeMismatch(t *testing.T) {
	s := state.New()
	state.Set(bg, s, "k", "text")
	defer func() {
		v := recover()
		err, _ := v.(error) // nil unless the panic value is an error
		var te *state.TypeError
		require.ErrorAs(t, err, &te, "panic value = %v, want a *state.TypeError", v)
	}()
	state.NewSetter[int](s, "k").Update(bg, func(n int) int { return n + 1 })
}

func TestGetMissingKey(t *testing.T) {
	_, err := state.Get[int](bg, state.New(), "nope")
	var nf *state.NotFoundError
	require.ErrorAs(t, err, &nf)
	require.Equal(t, "nope", nf.Key, "NotFoundError.Key")
	// The message is the contract here: it names the key.
	assert.Contains(t, err.Error(), `"nope"`, "the error does not name the key")
}

type profile struct {
	Name  string             `json:"name"`
	Tags  []string           `json:"tags"`
	Score map[string]float64 `json:"score"`
}

func TestJSONRoundTrip(t *testing.T) {
	s := state.New()
	state.Set(bg, s, "count", 7)
	state.Set(bg, s, "name", "ada")
	state.Set(bg, s, "profile", profile{Name: "ada", Tags: []string{"x", "y"}, Score: map[string]float64{"a": 1.5}})
	state.Set(bg, s, "ptr", (*int)(nil))

	data, err := json.Marshal(s)
	require.NoError(t, err)
	wantJSON := `{"count":7,"name":"ada","profile":{"name":"ada","tags":["x","y"],"score":{"a":1.5}},"ptr":null}`
	assert.Empty(t, cmp.Diff(wantJSON, string(data)), "JSON mismatch (-want +got)")

	r := state.New()
	state.Set(bg, r, "stale", true) // replaced by Unmarshal
	require.NoError(t, json.Unmarshal(data, r))
	assert.Empty(t, cmp.Diff([]string{"count", "name", "profile", "ptr"}, r.Keys()), "keys mismatch (-want +got)")
	// Restored values are kept as JSON until read.
	assert.Equal(t, json.RawMessage("7"), r.Snapshot()["count"], "Snapshot()[count] before the first read")

	// The first typed read decodes; Init does not overwrite a restored value.
	n, err := state.Init(r, "count", 0)
	assert.NoError(t, err, "Init(count) after restore")
	assert.Equal(t, 7, n, "Init(count) after restore")
	assert.Equal(t, 7, r.Snapshot()["count"], "Snapshot()[count] after the first read")
	p, err := state.Get[profile](bg, r, "profile")
	require.NoError(t, err)
	assert.Empty(t, cmp.Diff(profile{Name: "ada", Tags: []string{"x", "y"}, Score: map[string]float64{"a": 1.5}}, p), "profile mismatch (-want +got)")
	// Once decoded, the key holds the type it was read as.
	_, err = state.Get[string](bg, r, "count")
	assert.Error(t, err, "count decoded as int can be read as string")

	again, err := json.Marshal(r)
	require.NoError(t, err)
	assert.Empty(t, cmp.Diff(wantJSON, string(again)), "second round trip mismatch (-want +got)")
}

func TestRestoredValueOfWrongType(t *testing.T) {
	s := state.New()
	require.NoError(t, json.Unmarshal([]byte(`{"count":"seven"}`), s))
	_, err := state.Get[int](bg, s, "count")
	var te *state.TypeError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, "count", te.Key, "TypeError.Key")
	assert.Equal(t, "int", te.Want, "TypeError.Want")
	assert.Error(t, te.Err, "TypeError.Err: want the decoding error")
	var je *json.UnmarshalTypeError
	assert.ErrorAs(t, te.Err, &je, "TypeError.Err")
	// The raw value is kept: it can still be read as the right type.
	got, err := state.Get[string](bg, s, "count")
	assert.NoError(t, err, "Get[string]")
	assert.Equal(t, "seven", got, "Get[string]")
}

func TestMarshalNamesUnserializableKey(t *testing.T) {
	s := state.New()
	state.Set(bg, s, "ok", 1)
	state.Set(bg, s, "bad", make(chan int))
	_, err := json.Marshal(s)
	require.Error(t, err, "a channel was serialized")
	var ue *json.UnsupportedTypeError
	assert.ErrorAs(t, err, &ue, "Marshal")
	// The error is untyped: the key is only in the text.
	assert.Contains(t, err.Error(), `"bad"`, "the error does not name the key")
}

func TestUnmarshalRejectsNonObject(t *testing.T) {
	assert.Error(t, json.Unmarshal([]byte(`[1,2]`), state.New()), "an array was accepted as a store")
}

func TestConcurrentUpdates(t *testing.T) {
	s := state.New()
	set := state.NewSetter[int](s, "n")
	set.Set(bg, 0)
	const workers, each = 16, 100
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				set.Update(bg, func(n int) int { return n + 1 })
				_, _ = state.Get[int](bg, s, "n")
				_ = s.Snapshot()
			}
		})
	}
	wg.Wait()
	got, _ := state.Get[int](bg, s, "n")
	assert.Equal(t, workers*each, got, "n after %d concurrent updates", workers*each)
}

func ExampleSetter_Update() {
	s := state.New()
	count, _ := state.Init(s, "count", 10)
	set := state.NewSetter[int](s, "count")
	set.Update(bg, func(n int) int { return n + 5 })
	set.Update(bg, func(n int) int { return n * 2 })
	live, _ := state.Get[int](bg, s, "count")
	fmt.Println(count, live)
	// Output: 10 30
}

func ExampleStore_UnmarshalJSON() {
	s := state.New()
	_ = json.Unmarshal([]byte(`{"todo":["a","b"]}`), s)
	todo, _ := state.Get[[]string](context.Background(), s, "todo")
	fmt.Println(todo)
	// Output: [a b]
}
