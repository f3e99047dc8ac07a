package prompt_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/internal/scenario"
	"github.com/reprompt/reprompt/prompt"
)

// BenchmarkExecuteS1 is one execution of scenario S1's prompt function
// (its declarations, states and effects), the part of a step of
// runtime's BenchmarkScenarioS1 that package prompt does:
//
//	go test ./prompt -run '^$' -bench ExecuteS1
func BenchmarkExecuteS1(b *testing.B) {
	p := prompt.New("")
	_, err := p.Execute(0, scenario.S1)
	require.NoError(b, err, "Execute(0)")
	b.ReportAllocs()
	step := 1
	for b.Loop() {
		_, err := p.Execute(step, scenario.S1)
		require.NoError(b, err, "Execute")
		step++
	}
}
