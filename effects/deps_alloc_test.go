package effects_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/effects"
)

// TestUnchangedDepsAreSkippedWithoutAllocating checks that deciding an
// effect is not due costs no allocation for the common dependency types,
// and that a change is still seen for each of them.
func TestUnchangedDepsAreSkippedWithoutAllocating(t *testing.T) {
	long := strings.Repeat("x", 100)
	tests := []struct {
		name      string
		same, new any
	}{
		{"string", "start", "done"},
		{"string needing quotes", "a \"b\"\n\u00e9", "a \"b\"\n\u00e8"},
		{"long string", long, long + "y"},
		{"int", -12345, -12346},
		{"bool", true, false},
		{"named", effects.Named("phase", "a"), effects.Named("phase", "b")},
		{"slice", []int{1, 2}, []int{1, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m effects.Manager
			runs := 0
			fn := func(context.Context, *effects.Step) error { runs++; return nil }
			deps := effects.On(tt.same, 1)
			step := effects.NewStep(0, nil)
			declare := func(d effects.Deps) {
				m.Begin()
				register(&m, d, fn, effects.Key("e"))
				require.NoError(t, m.End(), "End")
			}
			execute := func(d effects.Deps) {
				declare(d)
				_, err := m.Run(context.Background(), effects.BeforeCall, step)
				require.NoError(t, err, "Run")
			}
			execute(deps)
			require.Equal(t, 1, runs, "runs at the first step")
			declare(deps)
			allocs := testing.AllocsPerRun(10, func() {
				_, err := m.Run(context.Background(), effects.BeforeCall, step)
				require.NoError(t, err, "Run")
			})
			require.Equal(t, 1, runs, "ran again with unchanged dependencies")
			if tt.name != "long string" && tt.name != "slice" { // those two are encoded
				assert.Equal(t, 0.0, allocs, "allocations to skip an effect whose dependencies did not change")
			}
			execute(effects.On(tt.new, 1))
			assert.Equal(t, 2, runs, "did not run when %v became %v", tt.same, tt.new)
		})
	}
}
