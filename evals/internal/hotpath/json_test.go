package hotpath

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAppendFloat(t *testing.T) {
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1, 214, 1e15 - 1, 1e15, -1e15 + 1, 123456789012345, 0.1, 1e-7, 1.5e-9, -2e-10, 1e-6, 123456.789, 1e20, 1e21, 3e21, 1.7e308, 5e-324} {
		want, err := json.Marshal(f)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(AppendFloat(nil, f)), "AppendFloat(%v)", f)
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("plain")
	f.Add("\"\\\n\x00\xff\u2028é")
	f.Fuzz(func(t *testing.T, s string) {
		var got string
		require.NoError(t, json.Unmarshal(AppendString(nil, s), &got), "AppendString(%q)", s)
		want, _ := json.Marshal(s)
		var w string
		require.NoError(t, json.Unmarshal(want, &w))
		assert.Equal(t, w, got, "AppendString(%q) read back", s)
	})
}

func FuzzAppendFloat(f *testing.F) {
	f.Add(0.17213119999999998)
	f.Add(214.0)
	f.Add(1e-7)
	f.Fuzz(func(t *testing.T, x float64) {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return // encoding/json refuses them
		}
		want, err := json.Marshal(x)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(AppendFloat(nil, x)), "AppendFloat(%v)", x)
	})
}
