package session_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/session/sessiontest"
)

// TestEncodeMessageKeepsArguments pins the stored form of tool-call
// arguments: as encoding/json writes them when that gives them back, else
// readable under "arguments" (a JSON string when they are not JSON) and
// exact under "raw_arguments".
func TestEncodeMessageKeepsArguments(t *testing.T) {
	tests := []struct {
		args json.RawMessage
		want string
	}{
		{json.RawMessage(`{"a":1}`), `{"role":"assistant","tool_calls":[{"id":"c","name":"n","arguments":{"a":1}}]}`},
		{json.RawMessage(`{"a":`), `{"role":"assistant","tool_calls":[{"id":"c","name":"n","arguments":"{\"a\":"}],"raw_arguments":{"0":"eyJhIjo="}}`},
		{json.RawMessage(`{ "a": 1 }`), `{"role":"assistant","tool_calls":[{"id":"c","name":"n","arguments":{"a":1}}],"raw_arguments":{"0":"eyAiYSI6IDEgfQ=="}}`},
		{json.RawMessage("\xff"), `{"role":"assistant","tool_calls":[{"id":"c","name":"n","arguments":"\ufffd"}],"raw_arguments":{"0":"/w=="}}`},
		{nil, `{"role":"assistant","tool_calls":[{"id":"c","name":"n","arguments":null}],"raw_arguments":{"0":null}}`},
		{json.RawMessage{}, `{"role":"assistant","tool_calls":[{"id":"c","name":"n","arguments":""}],"raw_arguments":{"0":""}}`},
	}
	for _, tt := range tests {
		t.Run(string(tt.args), func(t *testing.T) {
			m := defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: "c", Name: "n", Arguments: tt.args}}}
			b, err := session.EncodeMessage(m)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(b))
			got, err := session.DecodeMessage(b)
			require.NoError(t, err)
			assert.Equal(t, tt.args == nil, got.ToolCalls[0].Arguments == nil, "nil arguments")
			assert.Empty(t, cmp.Diff(m, got), "round trip mismatch (-want +got)")
		})
	}
}

// TestRawArgumentsThroughPlanAndLoad sends every argument of
// sessiontest.RawArguments through Plan and Load, in the transcript and in
// a pending reply and its results.
func TestRawArgumentsThroughPlanAndLoad(t *testing.T) {
	cp := sessiontest.Fixture("raw", 0)
	var calls []defs.ToolCall
	var results []defs.ToolResult
	for i, a := range sessiontest.RawArguments {
		c := defs.ToolCall{ID: string(rune('a' + i)), Name: "n", Arguments: a}
		calls = append(calls, c)
		results = append(results, defs.ToolResult{CallID: c.ID, Name: c.Name, Arguments: a, Content: "ok"})
	}
	cp.Transcript = []defs.Message{defs.UserMessage("go"), {Role: defs.RoleAssistant, ToolCalls: calls}}
	cp.Pending = &session.Pending{Reply: defs.Message{Role: defs.RoleAssistant, ToolCalls: calls}, Results: results}
	w, err := session.Plan(cp, session.Tip{})
	require.NoError(t, err)
	got, err := session.Load("raw", 1, w.Head, func(root, gen, n int) ([]session.Row, error) {
		rows := make([]session.Row, len(w.Messages))
		for i, m := range w.Messages {
			rows[i] = session.Row{Index: i, Data: m}
		}
		return rows, nil
	})
	require.NoError(t, err)
	want := *cp
	want.Seq, want.Version, want.Incarnation = 1, cp.FormatVersion(), w.Tip.Incarnation
	assert.Empty(t, cmp.Diff(&want, got), "checkpoint mismatch (-want +got)")
	for i, a := range sessiontest.RawArguments {
		assert.Equal(t, a == nil, got.Transcript[1].ToolCalls[i].Arguments == nil, "call %d: nil arguments", i)
		assert.Equal(t, a == nil, got.Pending.Reply.ToolCalls[i].Arguments == nil, "pending call %d: nil arguments", i)
	}
}

// TestRawArgumentsOutOfRange checks that raw arguments naming a call the
// message does not have are an error, in a row and in a head.
func TestRawArgumentsOutOfRange(t *testing.T) {
	_, err := session.DecodeMessage([]byte(`{"role":"assistant","tool_calls":[{"id":"c","name":"n","arguments":{}}],"raw_arguments":{"1":"e30="}}`))
	require.Error(t, err)
	// The decoding errors are untyped: what is wrong is only in the text.
	assert.Contains(t, err.Error(), "raw arguments of tool call 1 of a message with 1 tool calls")
	_, err = session.DecodeMessage([]byte(`{"role":"assistant","raw_arguments":{"-1":"e30="}}`))
	require.Error(t, err)
	_, err = session.DecodeHead([]byte(`{"version":1,"session_id":"s","seq":1,"messages":0,"pending":{"reply":{"role":"assistant","raw_arguments":{"0":"e30="}}}}`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "pending reply")
}

// FuzzArgumentsRoundTrip checks that any tool-call arguments, in a message
// and in a pending reply and result, come back byte for byte.
func FuzzArgumentsRoundTrip(f *testing.F) {
	for _, a := range sessiontest.RawArguments {
		f.Add([]byte(a))
	}
	f.Add([]byte(`{"a":"\u2028"}`))
	f.Add([]byte("{\"a\":\"\u2028\"}"))
	f.Add([]byte(`{"a":"\"<"}`))
	f.Add([]byte(`[1, 2]`))
	f.Fuzz(func(t *testing.T, args []byte) {
		m := defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: "c", Name: "n", Arguments: args}}}
		b, err := session.EncodeMessage(m)
		require.NoError(t, err)
		got, err := session.DecodeMessage(b)
		require.NoError(t, err)
		require.Equal(t, string(args), string(got.ToolCalls[0].Arguments), "stored as %s", b)

		cp := &session.Checkpoint{SessionID: "s", Seq: 1, Pending: &session.Pending{Reply: m,
			Results: []defs.ToolResult{{CallID: "c", Name: "n", Arguments: args}}}}
		h, err := session.EncodeHead(cp)
		require.NoError(t, err)
		hd, err := session.DecodeHead(h)
		require.NoError(t, err)
		require.Equal(t, string(args), string(hd.Checkpoint.Pending.Reply.ToolCalls[0].Arguments))
		require.Equal(t, string(args), string(hd.Checkpoint.Pending.Results[0].Arguments))
	})
}
