package effects_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/effects"
)

// On keeps lists of up to four values in arrays and longer ones in a
// slice: whatever the length, a change of any value, and only a change,
// makes the effect run, and the reason names the value that changed.
func TestOnEveryLength(t *testing.T) {
	for n := 1; n <= 6; n++ {
		for changed := range n {
			t.Run(fmt.Sprintf("%d values, #%d changes", n, changed), func(t *testing.T) {
				vals := func(step int) []any {
					v := make([]any, n)
					for i := range v {
						v[i] = i
						if i == changed {
							v[i] = 100 + step/2 // changes at steps 2 and 4
						}
					}
					return v
				}
				var m effects.Manager
				var steps []int
				var reasons []string
				for step := range 6 {
					ran := execute(t, &m, step, func() { register(&m, effects.On(vals(step)...), nop) })
					for _, r := range ran {
						steps = append(steps, step)
						reasons = append(reasons, r.Reason.String())
					}
				}
				assert.Equal(t, []int{0, 2, 4}, steps)
				require.Len(t, reasons, 3)
				assert.Equal(t, fmt.Sprintf("deps[%d]: 101 → 102", changed), reasons[2])
			})
		}
	}
}

var depsSink effects.Deps

// On copies up to four values into one allocation; its variadic slice
// costs none.
func TestOnAllocatesOnce(t *testing.T) {
	a, b, c, d := any("x"), any(1), any(true), any("y")
	for n, call := range []func() effects.Deps{
		func() effects.Deps { return effects.On(a) },
		func() effects.Deps { return effects.On(a, b) },
		func() effects.Deps { return effects.On(a, b, c) },
		func() effects.Deps { return effects.On(a, b, c, d) },
	} {
		allocs := testing.AllocsPerRun(100, func() { depsSink = call() })
		assert.Equal(t, 1.0, allocs, "On with %d values", n+1)
	}
}

// The effects a Run returns are the caller's: later runs do not change
// them.
func TestRanNotChangedByLaterRuns(t *testing.T) {
	var m effects.Manager
	var all [][]effects.Ran
	var copies [][]effects.Ran
	for step := range 4 {
		ran := execute(t, &m, step, func() {
			register(&m, effects.Always, nop)
			register(&m, effects.On(step), nop)
			register(&m, effects.On(step/2), nop)
		})
		all = append(all, ran)
		copies = append(copies, append([]effects.Ran(nil), ran...))
	}
	assert.Equal(t, copies, all)
	assert.Len(t, all[3], 2, "at step 3: the always effect and On(step)")
}
