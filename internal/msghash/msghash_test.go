package msghash_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/internal/msghash"
)

func TestMessage(t *testing.T) {
	base := defs.Message{Role: defs.RoleAssistant, Content: "ab", Name: "n", ToolCallID: "c",
		ToolCalls: []defs.ToolCall{{ID: "1", Name: "t", Arguments: json.RawMessage(`{}`)}}}
	same := base
	same.ToolCalls = []defs.ToolCall{{ID: "1", Name: "t", Arguments: json.RawMessage(`{}`)}}
	assert.Equal(t, msghash.Message(&base), msghash.Message(&same), "equal parts, other memory")

	changes := map[string]func(m *defs.Message){
		"role":     func(m *defs.Message) { m.Role = defs.RoleUser },
		"content":  func(m *defs.Message) { m.Content = "abc" },
		"name":     func(m *defs.Message) { m.Name = "" },
		"call id":  func(m *defs.Message) { m.ToolCallID = "d" },
		"no calls": func(m *defs.Message) { m.ToolCalls = nil },
		"arguments": func(m *defs.Message) {
			m.ToolCalls = []defs.ToolCall{{ID: "1", Name: "t", Arguments: json.RawMessage(`{ }`)}}
		},
		// length prefixes keep moved boundaries apart
		"boundary": func(m *defs.Message) { m.Content, m.Name = "abn", "" },
	}
	for name, change := range changes {
		m := base
		change(&m)
		assert.NotEqual(t, msghash.Message(&base), msghash.Message(&m), name)
	}
}
