package effects_test

import (
	"context"
	"fmt"

	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/internal/callsite"
)

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
