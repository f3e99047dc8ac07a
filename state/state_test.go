package state_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reprompt/reprompt/state"
)

func TestInitStoresOnlyWhenNew(t *testing.T) {
	s := state.New()
	got, err := state.Init(s, "count", 10)
	if err != nil || got != 10 {
		t.Fatalf("first Init = %d, %v; want 10, nil", got, err)
	}
	state.Set(bg, s, "count", 42)
	got, err = state.Init(s, "count", 10)
	if err != nil || got != 42 {
		t.Fatalf("second Init = %d, %v; want the stored 42, nil (initial must be ignored)", got, err)
	}
	if n := s.Len(); n != 1 {
		t.Errorf("Len = %d, want 1", n)
	}
}

func TestSetAndUpdateApplyInCallOrder(t *testing.T) {
	s := state.New()
	if _, err := state.Init(s, "n", 0); err != nil {
		t.Fatal(err)
	}
	set := state.NewSetter[int](s, "n")
	set.Set(bg, 10)
	set.Update(bg, func(n int) int { return n + 5 })
	set.Update(bg, func(n int) int { return n * 2 })
	got, err := state.Get[int](bg, s, "n")
	if err != nil {
		t.Fatal(err)
	}
	if got != 30 {
		t.Errorf("10, +5, ×2 = %d, want 30", got)
	}
	if set.Key() != "n" {
		t.Errorf("Key() = %q, want %q", set.Key(), "n")
	}
}

func TestUpdateUnsetKeyStartsFromZero(t *testing.T) {
	s := state.New()
	if err := state.Update(bg, s, "fresh", func(n int) int { return n + 1 }); err != nil {
		t.Fatal(err)
	}
	if got, _ := state.Get[int](bg, s, "fresh"); got != 1 {
		t.Errorf("got %d, want 1", got)
	}
}

func TestVersionChangesOnEveryStore(t *testing.T) {
	s := state.New()
	v0 := s.Version()
	state.Set(bg, s, "a", 1)
	v1 := s.Version()
	_, _ = state.Get[int](bg, s, "a")
	if s.Version() != v1 {
		t.Error("a read changed the version")
	}
	if err := state.Update(bg, s, "a", func(n int) int { return n }); err != nil {
		t.Fatal(err)
	}
	if !(v0 < v1 && v1 < s.Version()) {
		t.Errorf("versions %d, %d, %d are not increasing", v0, v1, s.Version())
	}
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
			if !errors.As(err, &te) {
				t.Fatalf("err = %v, want *state.TypeError", err)
			}
			want := &state.TypeError{Key: "count", Have: "int", Want: "string"}
			if diff := cmp.Diff(want, te); diff != "" {
				t.Errorf("TypeError mismatch (-want +got):\n%s", diff)
			}
			// The message is the contract here: it names the key and both
			// types (the one test of TypeError's text).
			for _, s := range []string{`"count"`, "int", "string"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not name %s", err, s)
				}
			}
		})
	}
	if got, _ := state.Get[int](bg, s, "count"); got != 3 {
		t.Errorf("a failed Update changed the value to %d", got)
	}
}

func TestSetterUpdatePanicsOnTypeMismatch(t *testing.T) {
	s := state.New()
	state.Set(bg, s, "k", "text")
	defer func() {
		v := recover()
		err, ok := v.(error)
		var te *state.TypeError
		if !ok || !errors.As(err, &te) {
			t.Fatalf("panic value = %v, want a *state.TypeError", v)
		}
	}()
	state.NewSetter[int](s, "k").Update(bg, func(n int) int { return n + 1 })
}

func TestGetMissingKey(t *testing.T) {
	_, err := state.Get[int](bg, state.New(), "nope")
	var nf *state.NotFoundError
	if !errors.As(err, &nf) || nf.Key != "nope" {
		t.Fatalf("err = %v, want *state.NotFoundError for %q", err, "nope")
	}
	// The message is the contract here: it names the key.
	if !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("error %q does not name the key", err)
	}
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
	if err != nil {
		t.Fatal(err)
	}
	wantJSON := `{"count":7,"name":"ada","profile":{"name":"ada","tags":["x","y"],"score":{"a":1.5}},"ptr":null}`
	if diff := cmp.Diff(wantJSON, string(data)); diff != "" {
		t.Errorf("JSON mismatch (-want +got):\n%s", diff)
	}

	r := state.New()
	state.Set(bg, r, "stale", true) // replaced by Unmarshal
	if err := json.Unmarshal(data, r); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"count", "name", "profile", "ptr"}, r.Keys()); diff != "" {
		t.Errorf("keys mismatch (-want +got):\n%s", diff)
	}
	// Restored values are kept as JSON until read.
	if raw, ok := r.Snapshot()["count"].(json.RawMessage); !ok || string(raw) != "7" {
		t.Errorf("Snapshot()[count] = %#v, want json.RawMessage(7) before the first read", r.Snapshot()["count"])
	}

	// The first typed read decodes; Init does not overwrite a restored value.
	n, err := state.Init(r, "count", 0)
	if err != nil || n != 7 {
		t.Errorf("Init(count) after restore = %d, %v; want 7, nil", n, err)
	}
	if v, ok := r.Snapshot()["count"].(int); !ok || v != 7 {
		t.Errorf("Snapshot()[count] = %#v after the first read, want int 7", r.Snapshot()["count"])
	}
	p, err := state.Get[profile](bg, r, "profile")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(profile{Name: "ada", Tags: []string{"x", "y"}, Score: map[string]float64{"a": 1.5}}, p); diff != "" {
		t.Errorf("profile mismatch (-want +got):\n%s", diff)
	}
	// Once decoded, the key holds the type it was read as.
	if _, err := state.Get[string](bg, r, "count"); err == nil {
		t.Error("count decoded as int can be read as string")
	}

	again, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantJSON, string(again)); diff != "" {
		t.Errorf("second round trip mismatch (-want +got):\n%s", diff)
	}
}

func TestRestoredValueOfWrongType(t *testing.T) {
	s := state.New()
	if err := json.Unmarshal([]byte(`{"count":"seven"}`), s); err != nil {
		t.Fatal(err)
	}
	_, err := state.Get[int](bg, s, "count")
	var te *state.TypeError
	if !errors.As(err, &te) {
		t.Fatalf("err = %v, want *state.TypeError", err)
	}
	if te.Key != "count" || te.Want != "int" || te.Err == nil {
		t.Errorf("TypeError = %+v, want key count, want int and a decoding error", te)
	}
	var je *json.UnmarshalTypeError
	if !errors.As(te.Err, &je) {
		t.Errorf("TypeError.Err = %v, want the *json.UnmarshalTypeError", te.Err)
	}
	// The raw value is kept: it can still be read as the right type.
	if got, err := state.Get[string](bg, s, "count"); err != nil || got != "seven" {
		t.Errorf("Get[string] = %q, %v; want seven, nil", got, err)
	}
}

func TestMarshalNamesUnserializableKey(t *testing.T) {
	s := state.New()
	state.Set(bg, s, "ok", 1)
	state.Set(bg, s, "bad", make(chan int))
	_, err := json.Marshal(s)
	if err == nil {
		t.Fatal("a channel was serialized")
	}
	var ue *json.UnsupportedTypeError
	if !errors.As(err, &ue) {
		t.Errorf("Marshal = %v, want it to wrap *json.UnsupportedTypeError", err)
	}
	// The error is untyped: the key is only in the text.
	if !strings.Contains(err.Error(), `"bad"`) {
		t.Errorf("error %q does not name the key", err)
	}
}

func TestUnmarshalRejectsNonObject(t *testing.T) {
	if err := json.Unmarshal([]byte(`[1,2]`), state.New()); err == nil {
		t.Error("an array was accepted as a store")
	}
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
	if got, _ := state.Get[int](bg, s, "n"); got != workers*each {
		t.Errorf("n = %d after %d concurrent updates", got, workers*each)
	}
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
