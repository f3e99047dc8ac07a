package viewer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/cmd/reprompt/internal/viewer"
	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/session"
)

// countingWriter counts what is written to it.
type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// wideSession saves into st a session of steps steps whose transcript
// grows by a reply and a tool result a step and is compacted only every
// 4,000 steps (a model with a window of about a million tokens): requests
// of up to 8,000 messages, one checkpoint a step, with its record.
func wideSession(t testing.TB, st session.Store, id string, steps int) {
	ctx := context.Background()
	cp := &session.Checkpoint{SessionID: id, Transcript: []defs.Message{defs.UserMessage("Fix the tests.")}}
	require.NoError(t, st.Save(ctx, cp))
	for step := range steps {
		call := defs.ToolCall{ID: fmt.Sprint("call-", step), Name: "read_file", Arguments: json.RawMessage(fmt.Sprintf(`{"path":"f%d.go"}`, step%97))}
		reply := defs.Message{Role: defs.RoleAssistant, Content: fmt.Sprint("Reading f", step%97, ".go."), ToolCalls: []defs.ToolCall{call}}
		result := defs.Message{Role: defs.RoleTool, ToolCallID: call.ID, Name: call.Name, Content: fmt.Sprint("package f // ", step)}
		var commits []session.CommitRecord
		if step%4000 == 3999 {
			prev := len(cp.Transcript)
			cp.Transcript = append([]defs.Message{cp.Transcript[0], defs.UserMessage(fmt.Sprint("[summary of step ", step, "]"))}, cp.Transcript[prev-4:]...)
			cp.Generation++
			commits = []session.CommitRecord{{Before: prev, After: len(cp.Transcript)}}
		}
		cp.Transcript = append(cp.Transcript, reply, result)
		cp.Step = step + 1
		cp.State = json.RawMessage(fmt.Sprintf(`{"step":%d}`, step))
		cp.Record = &session.StepRecord{Version: session.RecordVersion, Step: step, Tools: []string{"read_file", "write_file"},
			InputTokens: 1000 + step, PrefixTokens: 990 + step, Usage: session.Usage{InputTokens: 1000 + step, OutputTokens: 20},
			Effects: []effects.Ran{{ID: "key:compact#0", Site: "main.go:30", Phase: effects.BeforeCall}},
			Calls:   []session.CallRecord{{ID: call.ID, Name: call.Name, DurationNS: 1000}}, Commits: commits, Finish: "tool_calls"}
		require.NoError(t, st.Save(ctx, cp))
		cp.Base = 0
	}
	cp.Done, cp.Record = true, nil
	require.NoError(t, st.Save(ctx, cp))
}

// TestPage10000Steps writes the page of a 10,000-step session whose
// requests grow to 8,000 messages: under 20 MB, read and written in under
// 5 s (not asserted under the race detector, which slows it tenfold).
// Its log gives the figures of docs/performance.md.
func TestPage10000Steps(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a 10,000-step session")
	}
	const steps = 10_000
	st := session.NewMemory()
	wideSession(t, st, "wide", steps)
	start := time.Now()
	run, err := viewer.FromStore(t.Context(), st, "wide")
	require.NoError(t, err)
	read := time.Since(start)
	var w countingWriter
	require.NoError(t, viewer.HTML(&w, run))
	total := time.Since(start)
	require.Len(t, run.Steps, steps)
	t.Logf("%d steps: page %.2f MB, read in %v, read and written in %v", steps, float64(w.n)/1e6, read.Round(time.Millisecond), total.Round(time.Millisecond))
	assert.Less(t, w.n, int64(20e6), "the page of %d steps is %.1f MB", steps, float64(w.n)/1e6)
	if !raceEnabled {
		assert.Less(t, total, 5*time.Second, "the page of %d steps took %v to read and write", steps, total)
	}
}
