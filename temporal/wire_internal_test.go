package temporal

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
)

// TestRequestPayloadKeepsCacheHints: a request sent to the model activity
// arrives with what the provider adapters read for prompt caching (the
// committed part, how far it repeats the previous request, the session
// id) and the typed answer asked for, not only with its messages and tools.
func TestRequestPayloadKeepsCacheHints(t *testing.T) {
	req := &llm.Request{
		System:   "sys",
		Messages: []defs.Message{defs.UserMessage("a"), defs.AssistantMessage("b"), defs.UserMessage("c")},
		Tools:    []llm.ToolSpec{{Name: "t", Parameters: json.RawMessage(`{"type":"object"}`)}},
		Agent:    "sub", Step: 3, SessionID: "s-1", Purpose: llm.PurposeSummary,
		Committed: 2, Repeated: 1,
		Output: &llm.OutputSpec{Name: "answer", Type: "main.Answer", Schema: json.RawMessage(`{"type":"object"}`), Mode: llm.OutputNative},
	}
	data, err := json.Marshal(generateInput{Agent: "a", Request: wireRequest(req)})
	require.NoError(t, err, "encode")
	var in generateInput
	require.NoError(t, json.Unmarshal(data, &in), "decode")
	assert.Empty(t, cmp.Diff(req, in.Request.request()), "the request the activity sends (-want +got)")
}
