package runtime

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type namedMap map[string]any

// TestYAMLCacheRendersEveryChange checks that the YAML cache reuses a
// rendering only for a value that renders the same: a value changed in
// place, a -0 for a 0, a nil for an empty slice, another type are all seen.
func TestYAMLCacheRendersEveryChange(t *testing.T) {
	inPlace := map[string]any{"n": 1, "list": []any{"a", 2.5}}
	ptr := &server{Host: "a"}
	tests := []struct {
		name       string
		prev, next func() any
	}{
		{"map changed in place", func() any { return inPlace }, func() any { inPlace["n"] = 2; return inPlace }},
		{"nested slice changed in place", func() any { return inPlace }, func() any { inPlace["list"].([]any)[1] = 3.5; return inPlace }},
		{"zero and minus zero", func() any { return 0.0 }, func() any { return math.Copysign(0, -1) }},
		{"nil and empty slice", func() any { return []string(nil) }, func() any { return []string{} }},
		{"nil and empty map", func() any { return map[string]any(nil) }, func() any { return map[string]any{} }},
		{"int and float", func() any { return 1 }, func() any { return 1.0 }},
		{"int and int64", func() any { return []any{1} }, func() any { return []any{int64(1)} }},
		{"key added", func() any { return map[string]int{"a": 1} }, func() any { return map[string]int{"a": 1, "b": 0} }},
		{"named type", func() any { return namedMap{"a": 1} }, func() any { return namedMap{"a": 2} }},
		{"struct pointer changed in place", func() any { return ptr }, func() any { ptr.Host = "b"; return ptr }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c yamlCache
			prev := tc.prev()
			first, err := c.render("v", prev)
			if err != nil {
				t.Fatal(err)
			}
			next := tc.next()
			want, err := valueText("v", next)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.render("v", next)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("second rendering %q, want %q (first %q)", got, want, first)
			}
		})
	}
}

type server struct{ Host string }

// TestYAMLCacheReusesPlainValues checks that an unchanged plain value, even
// a new map with the same contents, is rendered once and compared without
// allocating.
func TestYAMLCacheReusesPlainValues(t *testing.T) {
	mk := func() any {
		return map[string]any{"name": "s1", "retries": 3, "verbose": false, "weights": []float64{0.5, 1.5},
			"nested": map[string]any{"tags": []any{"a", "b"}, "limits": map[string]int{"x": 1}}}
	}
	var c yamlCache
	first, err := c.render("config", mk())
	if err != nil {
		t.Fatal(err)
	}
	v := mk()
	allocs := testing.AllocsPerRun(100, func() {
		got, err := c.render("config", v)
		if err != nil || got != first {
			t.Fatalf("got %q, %v; want %q", got, err, first)
		}
	})
	if allocs != 0 {
		t.Errorf("rendering an unchanged value allocates %v times", allocs)
	}
}

// TestSharedYAMLAcrossRuns checks that a new run's first render of a data
// value another run already rendered reuses its YAML instead of encoding it
// again, and that a changed value is encoded afresh.
func TestSharedYAMLAcrossRuns(t *testing.T) {
	v := map[string]any{"name": "shared", "weights": []float64{0.5, 1.5}, "n": 3}
	var first yamlCache
	want, err := first.render("shared_cfg", v)
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(20, func() {
		var c yamlCache // a new run's cache
		got, err := c.render("shared_cfg", v)
		if err != nil || got != want {
			t.Fatalf("render = %q, %v; want %q", got, err, want)
		}
	})
	assert.LessOrEqual(t, allocs, 3.0, "a shared render allocates only the run's own map")

	changed := map[string]any{"name": "shared", "weights": []float64{0.5, 2.5}, "n": 3}
	var c yamlCache
	got, err := c.render("shared_cfg", changed)
	require.NoError(t, err)
	assert.Contains(t, got, "2.5")
	assert.NotEqual(t, want, got)
}
