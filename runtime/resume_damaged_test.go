package runtime_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/snapshots"
)

// TestResumeDamagedPendingReply resumes checkpoints whose pending reply
// could not have been saved by a run (a damaged or hand-edited row that
// still decodes): Resume refuses them with a *session.CorruptError naming
// the pending reply, and runs no tool, instead of running the calls and
// failing the next step's validation.
func TestResumeDamagedPendingReply(t *testing.T) {
	args := json.RawMessage(`{}`)
	transcript := []defs.Message{
		defs.UserMessage("add twice"),
		{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: "c1", Name: "a", Arguments: args}}},
		{Role: defs.RoleTool, ToolCallID: "c1", Name: "a", Content: "1"},
	}
	for name, reply := range map[string]defs.Message{
		"not an assistant message":    {Role: defs.RoleUser, ToolCalls: []defs.ToolCall{{ID: "c2", Name: "a", Arguments: args}}},
		"a call id of the transcript": {Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: "c1", Name: "a", Arguments: args}}},
		"a call id twice": {Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{
			{ID: "c2", Name: "a", Arguments: args}, {ID: "c2", Name: "b", Arguments: args}}},
		"a call without id": {Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{Name: "a", Arguments: args}}},
	} {
		t.Run(name, func(t *testing.T) {
			cp := &session.Checkpoint{SessionID: "s", Seq: 3, Step: 1, Transcript: transcript,
				State: json.RawMessage(`{"n":1}`), Pending: &session.Pending{Reply: reply}}
			var rp resumable
			r, err := runtime.Resume(context.Background(), snapshots.Script(snapshots.Text("done")), rp.fn,
				runtime.Config{Store: latestStore{cp: cp}, SessionID: "s"})
			if err == nil {
				_, err = r.Run(context.Background())
				assert.Zero(t, rp.aRuns.Load()+rp.bRuns.Load(), "a tool ran for a damaged pending reply")
			}
			var ce *session.CorruptError
			require.ErrorAs(t, err, &ce)
			assert.Contains(t, err.Error(), "pending reply")
		})
	}
}
