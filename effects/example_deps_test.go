package effects_test

import (
	"context"
	"fmt"
	"math"

	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/internal/callsite"
)

func ExampleEncode() {
	a := map[string][]float64{"x": {1, math.NaN()}, "a": {math.Copysign(0, -1)}}
	b := map[string][]float64{"a": {0}, "x": {1, math.NaN()}}
	fmt.Println(effects.Encode(a))
	fmt.Println(effects.Encode(a) == effects.Encode(b))
	// Output:
	// {"a": [0], "x": [1, NaN]}
	// true
}

func ExampleNamed() {
	var m effects.Manager
	for step, count := range []int{1, 1, 2} {
		m.Begin()
		m.Register(callsite.CallerPC(0), effects.On(effects.Named("count", count)), nop)
		_ = m.End()
		ran, _ := m.Run(context.Background(), effects.BeforeCall, effects.NewStep(step, nil))
		for _, r := range ran {
			fmt.Printf("step %d: %s\n", step, r.Reason)
		}
	}
	// Output:
	// step 0: first run
	// step 2: count: 1 → 2
}
