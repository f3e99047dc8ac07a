package temporal_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/session"
	rt "github.com/reprompt/reprompt/temporal"
)

// A checkpoint carried across continue-as-new decodes to what was encoded,
// tool-call arguments that are not JSON included; a damaged one is a
// *session.CorruptError.
func TestCheckpointRoundTrip(t *testing.T) {
	cp := &session.Checkpoint{
		SessionID: "agent-1", Seq: 4, Step: 2, Generation: 1,
		Transcript: []defs.Message{
			defs.UserMessage("hi"),
			{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: "c1", Name: "t", Arguments: json.RawMessage(`{not json`)}}},
			{Role: defs.RoleTool, ToolCallID: "c1", Name: "t", Content: "error: bad", IsError: true},
		},
		State:        json.RawMessage(`{"n":1}`),
		SeenMessages: []string{"x"},
		Stats:        session.Stats{Steps: 2, InputTokens: 10},
	}
	enc, err := rt.EncodeCheckpoint(cp)
	require.NoError(t, err)
	b, err := json.Marshal(enc) // as a payload
	require.NoError(t, err)
	var back rt.Checkpoint
	require.NoError(t, json.Unmarshal(b, &back))
	got, err := back.Decode()
	require.NoError(t, err)
	assert.Empty(t, cmp.Diff(cp.Transcript, got.Transcript), "transcript mismatch (-want +got)")
	require.JSONEq(t, string(cp.State), string(got.State))
	require.Equal(t, cp.Step, got.Step)
	require.Equal(t, cp.Stats, got.Stats)

	back.Messages = back.Messages[:1]
	_, err = back.Decode()
	var ce *session.CorruptError
	require.ErrorAs(t, err, &ce, "a missing message: %v", err)

	_, err = (&rt.Checkpoint{Head: json.RawMessage(`{"v":`)}).Decode()
	require.ErrorAs(t, err, &ce, "a damaged head: %v", err)
}

// A message with arguments that are not JSON travels in a payload intact.
func TestMessagePayload(t *testing.T) {
	m := rt.Message{Message: defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: "c", Name: "t", Arguments: json.RawMessage("{\"a\": 1,}")}}}}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	var back rt.Message
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, string(m.ToolCalls[0].Arguments), string(back.ToolCalls[0].Arguments))
}
