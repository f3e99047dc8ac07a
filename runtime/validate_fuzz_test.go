package runtime_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/runtime"
)

// FuzzValidateDecodedMessages checks that ValidateMessages never panics and that
// what it reports is a *RequestError pointing into the messages. The fuzz
// bytes are read as a JSON array of messages when they are one, and else as
// a compact program of messages (see messagesFromBytes), so that the fuzzer
// explores transcripts of every shape.
func FuzzValidateDecodedMessages(f *testing.F) {
	seeds := [][]defs.Message{
		nil,
		{defs.UserMessage("hi"), defs.AssistantMessage("hello")},
		{
			defs.UserMessage("q"),
			{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: "a", Name: "t"}, {ID: "b", Name: "t"}}},
			{Role: defs.RoleTool, ToolCallID: "b"},
			{Role: defs.RoleTool, ToolCallID: "a"},
			defs.AssistantMessage("done"),
		},
		{{Role: defs.RoleTool, ToolCallID: "orphan"}},
		{{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: "x"}}}, defs.UserMessage("no result")},
		{{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: ""}}}},
		{{Role: "robot"}},
	}
	for _, s := range seeds {
		b, _ := json.Marshal(s)
		f.Add(b)
	}
	f.Add([]byte{0x00, 0x11, 0x22, 0x03, 0x13, 0x31, 0x40})
	f.Fuzz(func(t *testing.T, data []byte) {
		var msgs []defs.Message
		if json.Unmarshal(data, &msgs) != nil {
			msgs = messagesFromBytes(data)
		}
		err := runtime.ValidateMessages(msgs)
		if err == nil {
			return
		}
		re, ok := errors.AsType[*llm.RequestError](err)
		require.True(t, ok, "error %T (%v), want an *llm.RequestError", err, err)
		require.GreaterOrEqual(t, re.Index, 0, "RequestError.Index outside the %d messages: %v", len(msgs), err)
		require.Less(t, re.Index, len(msgs), "RequestError.Index outside the %d messages: %v", len(msgs), err)
		require.NotEmpty(t, re.Error(), "RequestError's message")
	})
}

// messagesFromBytes reads each byte as one message: the high nibble picks
// the role (user, assistant, tool, system, or an unknown one), the low
// nibble a call id from a small set (so ids repeat and collide) or, for an
// assistant message, how many tool calls it makes.
func messagesFromBytes(data []byte) []defs.Message {
	roles := []defs.Role{defs.RoleUser, defs.RoleAssistant, defs.RoleTool, defs.RoleSystem, "other"}
	msgs := make([]defs.Message, 0, len(data))
	next := 0
	for _, b := range data {
		role := roles[int(b>>4)%len(roles)]
		low := int(b & 0x0f)
		m := defs.Message{Role: role}
		switch role {
		case defs.RoleAssistant:
			for i := range low % 4 {
				id := fmt.Sprintf("c%d", (next+i)%6)
				if low >= 12 {
					id = ""
				}
				m.ToolCalls = append(m.ToolCalls, defs.ToolCall{ID: id, Name: "t"})
			}
			next += low % 4
		case defs.RoleTool:
			m.ToolCallID = fmt.Sprintf("c%d", low%7)
		}
		msgs = append(msgs, m)
	}
	return msgs
}
