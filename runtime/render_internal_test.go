package runtime

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/internal/stepmods"
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
			require.NoError(t, err)
			next := tc.next()
			want, err := valueText("v", next)
			require.NoError(t, err)
			got, err := c.render("v", next)
			require.NoError(t, err)
			assert.Equal(t, want, got, "second rendering (first %q)", first)
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
	require.NoError(t, err)
	v := mk()
	allocs := testing.AllocsPerRun(100, func() {
		// Only bools and constants reach testify here: it allocates nothing.
		got, err := c.render("config", v)
		require.NoError(t, err, "render of an unchanged value")
		require.True(t, got == first, "render of an unchanged value differs from the first")
	})
	assert.Equal(t, 0.0, allocs, "allocations to render an unchanged value")
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
		// Only bools and constants reach testify here: it allocates nothing.
		got, err := c.render("shared_cfg", v)
		require.NoError(t, err, "render in a new run's cache")
		require.True(t, got == want, "render in a new run's cache differs from the shared one")
	})
	assert.LessOrEqual(t, allocs, 3.0, "a shared render allocates only the run's own map")

	changed := map[string]any{"name": "shared", "weights": []float64{0.5, 2.5}, "n": 3}
	var c yamlCache
	got, err := c.render("shared_cfg", changed)
	require.NoError(t, err)
	assert.Contains(t, got, "2.5")
	assert.NotEqual(t, want, got)
}

// TestSystemRenderMatchesAFreshRender checks that a renderer that kept the
// system prompt of earlier steps renders, at every step of a sequence of
// changes, what a new renderer renders: an unchanged prompt is reused, and
// every kind of change is seen.
func TestSystemRenderMatchesAFreshRender(t *testing.T) {
	data := map[string]any{"count": 1}
	steps := []struct {
		name    string
		declare func(reg *defs.Registry)
		mods    stepmods.Mods
	}{
		{name: "first", declare: func(*defs.Registry) {}},
		{name: "unchanged", declare: func(*defs.Registry) {}},
		{name: "text changed", declare: func(reg *defs.Registry) {
			reg.Declare(defs.Def{Kind: defs.KindSystem, Name: "role", Text: "You count, carefully."})
		}},
		{name: "system part disabled", declare: func(reg *defs.Registry) { reg.Disable(defs.KindSystem, "rules") }},
		{name: "systems filtered", declare: func(*defs.Registry) {}, mods: stepmods.Mods{Systems: []string{"rules"}}},
		{name: "variable overridden", declare: func(*defs.Registry) {}, mods: stepmods.Mods{Variables: []stepmods.Variable{{Name: "user", Value: "Bo"}}}},
		{name: "variable added by mods", declare: func(*defs.Registry) {}, mods: stepmods.Mods{Variables: []stepmods.Variable{{Name: "extra", Value: 3}}}},
		{name: "variable multiline", declare: func(reg *defs.Registry) {
			reg.Declare(defs.Def{Kind: defs.KindVariable, Name: "user", Text: "Ada\nLovelace"})
		}},
		{name: "data changed in place", declare: func(*defs.Registry) { data["count"] = 2 }},
		{name: "variable disabled", declare: func(reg *defs.Registry) { reg.Disable(defs.KindVariable, "user") }},
		{name: "all disabled", declare: func(reg *defs.Registry) {
			for _, n := range []string{"role", "rules"} {
				reg.Disable(defs.KindSystem, n)
			}
			for _, n := range []string{"user", "config"} {
				reg.Disable(defs.KindVariable, n)
			}
		}},
		{name: "back to the start", declare: func(*defs.Registry) { data["count"] = 1 }},
	}
	var kept renderer
	var prev string
	for i, st := range steps {
		reg := defs.NewRegistry()
		reg.Declare(defs.Def{Kind: defs.KindSystem, Name: "role", Text: "You count."})
		reg.Declare(defs.Def{Kind: defs.KindSystem, Name: "rules", Text: "Once a turn.\n"})
		reg.Declare(defs.Def{Kind: defs.KindVariable, Name: "user", Text: "Ada"})
		reg.Declare(defs.Def{Kind: defs.KindVariable, Name: "config", Data: data, IsData: true})
		st.declare(reg)
		var fresh renderer
		want, err := fresh.system(reg, &st.mods)
		require.NoError(t, err, st.name)
		got, err := kept.system(reg, &st.mods)
		require.NoError(t, err, st.name)
		assert.Equal(t, want, got, st.name)
		if i > 0 && st.name != "unchanged" {
			assert.NotEqual(t, prev, got, "%s: the step's change is not in the prompt", st.name)
		}
		prev = got
	}
	assert.Equal(t, "<role>\nYou count.\n</role>\n\n<rules>\nOnce a turn.\n</rules>\n\n<variables>\n<user>Ada</user>\n<config>count: 1</config>\n</variables>", prev)
}
