package msgcodec

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
)

// TestCanonical pins which valid JSON is written as it is: what
// encoding/json writes for it byte for byte.
func TestCanonical(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want bool
	}{
		{`{"a":1}`, true},
		{`{"a":"x y"}`, true},
		{`{ "a": 1 }`, false},
		{`{"a":"<b>"}`, false},
		{`{"a":"\u2028"}`, true},
		{"{\"a\":\"\u2028\"}", false},
		{`{"a":"\"}"}`, true},
	} {
		require.True(t, json.Valid([]byte(tt.in)), "%s is not JSON", tt.in)
		assert.Equal(t, tt.want, canonical([]byte(tt.in)), "canonical(%s)", tt.in)
	}
}

// TestResultsRoundTrip checks that tool results keep their arguments as
// received, nil ones included.
func TestResultsRoundTrip(t *testing.T) {
	rs := []defs.ToolResult{
		{CallID: "a", Name: "n", Arguments: json.RawMessage(`{"x":1}`)},
		{CallID: "b", Name: "n", Arguments: json.RawMessage(`{ "x": 1 }`)},
		{CallID: "c", Name: "n"},
	}
	b, err := json.Marshal(StoreResults(rs))
	require.NoError(t, err)
	var stored []Result
	require.NoError(t, json.Unmarshal(b, &stored))
	assert.Empty(t, cmp.Diff(rs, LoadResults(stored)), "results (-want +got)")
	assert.Nil(t, StoreResults(nil), "StoreResults(nil)")
	assert.Nil(t, LoadResults(nil), "LoadResults(nil)")
}
