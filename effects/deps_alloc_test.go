package effects_test

import (
	"context"
	"strings"
	"testing"

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
				if err := m.End(); err != nil {
					t.Fatal(err)
				}
			}
			execute := func(d effects.Deps) {
				declare(d)
				if _, err := m.Run(context.Background(), effects.BeforeCall, step); err != nil {
					t.Fatal(err)
				}
			}
			execute(deps)
			if runs != 1 {
				t.Fatalf("ran %d times at the first step, want 1", runs)
			}
			declare(deps)
			allocs := testing.AllocsPerRun(10, func() {
				if _, err := m.Run(context.Background(), effects.BeforeCall, step); err != nil {
					t.Fatal(err)
				}
			})
			if runs != 1 {
				t.Fatalf("ran again with unchanged dependencies")
			}
			if allocs != 0 && tt.name != "long string" && tt.name != "slice" { // those two are encoded
				t.Errorf("skipping an effect whose dependencies did not change allocates %v times", allocs)
			}
			execute(effects.On(tt.new, 1))
			if runs != 2 {
				t.Errorf("did not run when %v became %v", tt.same, tt.new)
			}
		})
	}
}
