package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/examples/internal/agents"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// TestStructured is the example's snapshot, in both modes: every step,
// the invalid answer and the validation error sent back included.
func TestStructured(t *testing.T) {
	for _, mode := range []llm.OutputMode{llm.OutputTool, llm.OutputNative} {
		t.Run(string(mode), func(t *testing.T) {
			res := snapshots.Run(t, agents.TriageExample, agents.TriageScript(), snapshots.Config(runtime.Config{OutputMode: mode}))
			tr, err := runtime.Output[agents.Triage](res)
			require.NoError(t, err)
			require.Equal(t, 1, tr.Priority)
			require.NotNil(t, tr.Duplicate)
			require.Equal(t, 41, *tr.Duplicate)
		})
	}
}

// TestRunPrints checks what the command prints.
func TestRunPrints(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, agents.RunTriage(context.Background(), &b, agents.TriageScript(), "a scripted model (offline)", runtime.Config{}))
	out := b.String()
	require.True(t, strings.HasPrefix(out, "triage on a scripted model (offline)\n"), out)
	require.Contains(t, out, `step 1 (answer "triage" asked as tool)`)
	require.Contains(t, out, `want "integer"`)
	require.True(t, strings.HasSuffix(out, "triage: Panic on an empty config file. labels=[bug] priority=1 duplicate=#41\n"), out)
}
