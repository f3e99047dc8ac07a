package runtime_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/snapshots"
)

// BenchmarkScenarioS1Store is S1 with a checkpoint saved after every step
// into an in-memory store (which encodes each checkpoint as a database
// store does): what durability costs per step, the step record included.
//
//	go test ./runtime -run '^$' -bench ScenarioS1Store -count 6
func BenchmarkScenarioS1Store(b *testing.B) {
	for _, steps := range []int{100, 1000} {
		b.Run(fmt.Sprintf("steps=%d", steps), func(b *testing.B) {
			script := s1Script(steps)
			n := 0
			run := func() (*runtime.Result, error) {
				n++
				cfg := runtime.Config{MaxSteps: steps, Store: session.NewMemory(), SessionID: fmt.Sprint("s1-", n)}
				return runtime.Run(context.Background(), snapshots.Script(script...), scenarioS1, cfg)
			}
			_, err := run()
			require.NoError(b, err)
			benchSteps(b, steps, run)
		})
	}
}
