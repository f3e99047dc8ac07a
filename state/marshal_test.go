package state_test

import (
	"encoding/json"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/state"
)

// ticking has a JSON encoding of its own, which reads a value that
// changes: its JSON must not be kept. calls counts the encodings.
type ticking struct{ n, calls *atomic.Int64 }

func (t ticking) MarshalJSON() ([]byte, error) {
	t.calls.Add(1)
	return json.Marshal(t.n.Load())
}

type level int

func (l level) MarshalText() ([]byte, error) { return []byte([]string{"low", "high"}[l%2]), nil }

type plain struct {
	Name  string  `json:"name"`
	Count int     `json:"count,omitempty"`
	Pair  [2]int8 `json:"pair"`
	Inner struct{ OK bool }
	skip  [3]uint8 // an unexported field, ignored by encoding/json
}

// TestMarshalJSONAsEncodingJSON checks MarshalJSON, which keeps the JSON
// of keys and of values that cannot change, against what encoding/json
// writes for the same values, through sets, restores, first reads of
// restored values and values changed in place.
func TestMarshalJSONAsEncodingJSON(t *testing.T) {
	s := state.New()
	check := func(when string) {
		t.Helper()
		got, err := s.MarshalJSON()
		require.NoError(t, err, when)
		want, err := json.Marshal(s.Snapshot()) // raw values are json.RawMessage there
		require.NoError(t, err, when)
		assert.Equal(t, string(want), string(got), when)
		again, err := s.MarshalJSON()
		require.NoError(t, err, when)
		assert.Equal(t, string(got), string(again), when+", twice")
	}
	check("empty")
	state.Set(bg, s, "n", 12345)
	state.Set(bg, s, "neg", -7)
	state.Set(bg, s, "f", 1.5)
	state.Set(bg, s, "html <&>", "a <b> & \u2028 é \xff")
	state.Set(bg, s, "ok", true)
	state.Set(bg, s, "plain", plain{Name: "<x>", Pair: [2]int8{1, -2}, skip: [3]uint8{1}})
	state.Set(bg, s, "arr", [3]string{"a", "", "c"})
	state.Set(bg, s, "u", uint16(9))
	check("typed values")
	m := map[string]int{"b": 2, "a": 1}
	state.Set(bg, s, "map", m)
	sl := []string{"x"}
	state.Set(bg, s, "slice", sl)
	p := &plain{Name: "p"}
	state.Set(bg, s, "ptr", p)
	state.Set(bg, s, "when", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	state.Set(bg, s, "level", level(1))
	var tick, calls atomic.Int64
	state.Set(bg, s, "tick", ticking{&tick, &calls})
	check("values with references and encodings of their own")
	m["c"], sl[0], p.Name = 3, "y", "q" // changed in place, which a prompt must not do
	tick.Store(5)
	check("values changed in place")
	calls.Store(0)
	_, err := s.MarshalJSON()
	require.NoError(t, err)
	assert.Equal(t, int64(1), calls.Load(), "a value's MarshalJSON is called once")
	state.Set(bg, s, "n", 7)
	state.Set(bg, s, "new key", "v")
	check("a value set again and a new key")

	raw := `{"b" : [1, 2.50, "<&>"], "a":{"z":1, "y" : null}, "n": 1.50, "s":"\u00e9"}`
	r := state.New()
	require.NoError(t, r.UnmarshalJSON([]byte(raw)))
	s = r
	check("restored values")
	var f float64
	f, err = state.Get[float64](bg, s, "n") // decoded: written again from the value
	require.NoError(t, err)
	assert.Equal(t, 1.5, f)
	check("a restored value read")
	require.NoError(t, state.SetJSON(bg, s, "j", json.RawMessage(` { "k" : "<v>" } `)))
	check("a value set as JSON")
	require.NoError(t, s.UnmarshalJSON([]byte(`{"c":1,"d":2,"e":3,"f":4}`))) // as many keys, others
	check("restored again with other keys")

	state.Set(bg, s, "bad", math.NaN())
	_, err = s.MarshalJSON()
	require.ErrorContains(t, err, `state "bad" is not serializable`)
}

// A checkpoint's state, unchanged values and keys, costs one allocation.
func TestMarshalJSONUnchangedAllocatesOnce(t *testing.T) {
	s := state.New()
	state.Set(bg, s, "count", 1000)
	state.Set(bg, s, "phase", "start")
	state.Set(bg, s, "cfg", plain{Name: "x"})
	_, err := s.MarshalJSON()
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(100, func() {
		_, err := s.MarshalJSON()
		require.NoError(t, err, "MarshalJSON")
	})
	assert.Equal(t, 1.0, allocs)
}
