package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/examples/internal/agents"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// TestMain fails the run when a golden file under testdata was used by no
// test (after a test was renamed, say).
func TestMain(m *testing.M) { os.Exit(snapshots.CheckUnused(m)) }

// TestQuickstart snapshots every step of the quickstart run in
// testdata/TestQuickstart.txtar: the system prompt, messages, tools, effects
// and why they ran, disables, reminders, replies, tool results and state.
// After an intended change to the prompt, rewrite the file with
//
//	REPROMPT_UPDATE=1 go test ./examples/quickstart -run '^TestQuickstart$'
//
// and review its diff.
func TestQuickstart(t *testing.T) {
	res := snapshots.Run(t, agents.Todo, agents.TodoScript(), snapshots.Config(runtime.Config{MaxSteps: 20}))
	assert.Len(t, res.Steps, 7, "the run took %d steps, want 7", len(res.Steps))
}

// TestTraceFlag runs "go run -tags trace . -trace" and reads the spans the
// stdout exporter wrote: the run, its steps, and the model and tool calls
// under them. Without the tag, -trace is a clear error.
func TestTraceFlag(t *testing.T) {
	var stderr bytes.Buffer
	cmd := exec.Command("go", "run", "-tags", "trace", ".", "-trace")
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Run(), "stderr: %s", stderr.String())

	_, _, err := observe([]string{"-trace"}, io.Discard)
	// The message is the contract here: it gives the command to run.
	assert.ErrorContains(t, err, "go run -tags trace ./examples/quickstart -trace")

	type span struct {
		Name        string
		SpanContext struct{ SpanID string }
		Parent      struct{ SpanID string }
	}
	var spans []span
	dec := json.NewDecoder(&stderr)
	for dec.More() {
		var s span
		require.NoError(t, dec.Decode(&s))
		spans = append(spans, s)
	}
	byID := map[string]span{}
	count := map[string]int{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID] = s
		count[s.Name]++
	}
	assert.Empty(t, cmp.Diff(map[string]int{
		"invoke_agent quickstart":    1,
		"reprompt.step":              7,
		"chat":                       7,
		"execute_tool add_task":      2,
		"execute_tool complete_task": 4,
		"execute_tool note":          1,
	}, count), "spans mismatch (-want +got)")
	for _, s := range spans {
		parent := byID[s.Parent.SpanID].Name
		switch {
		case s.Name == "invoke_agent quickstart":
			assert.Equal(t, "0000000000000000", s.Parent.SpanID, "the run is the root")
		case s.Name == "reprompt.step":
			assert.Equal(t, "invoke_agent quickstart", parent)
		default:
			assert.Equal(t, "reprompt.step", parent, s.Name)
		}
	}
}

// TestLogFlag runs the quickstart as -log does: one record per step and
// one at the end.
func TestLogFlag(t *testing.T) {
	var stderr bytes.Buffer
	cfg, flush, err := observe([]string{"-log"}, &stderr)
	require.NoError(t, err)
	assert.Nil(t, cfg.TracerProvider)
	_, err = runtime.Run(context.Background(), agents.TodoScript(), agents.Todo, cfg)
	require.NoError(t, err)
	flush()
	out := stderr.String()
	assert.Equal(t, 7, strings.Count(out, "level=INFO msg=step agent=quickstart"), out)
	assert.Equal(t, 1, strings.Count(out, `msg="run ended"`), out)

	_, _, err = observe([]string{"-bogus"}, io.Discard)
	assert.Error(t, err)
}
