package runtime_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/runtime"
)

func user(s string) defs.Message      { return defs.UserMessage(s) }
func assistant(s string) defs.Message { return defs.AssistantMessage(s) }

func calls(ids ...string) defs.Message {
	m := defs.Message{Role: defs.RoleAssistant}
	for _, id := range ids {
		m.ToolCalls = append(m.ToolCalls, defs.ToolCall{ID: id, Name: "t_" + id, Arguments: []byte("{}")})
	}
	return m
}

func result(id string) defs.Message {
	return defs.Message{Role: defs.RoleTool, ToolCallID: id, Name: "t_" + id, Content: "r"}
}

func TestValidateMessages(t *testing.T) {
	tests := []struct {
		name      string
		msgs      []defs.Message
		wantIndex int    // -1: valid
		wantIn    string // substring of the reason
	}{
		{"empty", nil, -1, ""},
		{"plain conversation", []defs.Message{user("a"), assistant("b"), user("c")}, -1, ""},
		{"system message", []defs.Message{{Role: defs.RoleSystem, Content: "s"}, user("a")}, -1, ""},
		{"call and result", []defs.Message{user("a"), calls("c1"), result("c1"), assistant("done")}, -1, ""},
		{"parallel calls answered in order", []defs.Message{user("a"), calls("c1", "c2", "c3"), result("c1"), result("c2"), result("c3")}, -1, ""},
		{"parallel calls answered in any order", []defs.Message{user("a"), calls("c1", "c2", "c3"), result("c3"), result("c1"), result("c2"), user("next")}, -1, ""},
		{"several turns", []defs.Message{user("a"), calls("c1"), result("c1"), calls("c2"), result("c2"), assistant("ok")}, -1, ""},
		{"assistant with text and calls", []defs.Message{user("a"), {Role: defs.RoleAssistant, Content: "let me look", ToolCalls: calls("c1").ToolCalls}, result("c1")}, -1, ""},

		{"orphan tool result at start", []defs.Message{result("c1"), user("a")}, 0, `"c1" does not follow an assistant message`},
		{"orphan tool result after user", []defs.Message{user("a"), calls("c1"), result("c1"), user("b"), result("c1")}, 4, "does not follow"},
		{"result for another call", []defs.Message{user("a"), calls("c1"), result("c9")}, 2, `"c9" answers no call of message 1`},
		{"result of an earlier turn's call", []defs.Message{user("a"), calls("c1"), result("c1"), calls("c2"), result("c1")}, 4, "answers no call of message 3"},
		{"missing result before a user message", []defs.Message{user("a"), calls("c1", "c2"), result("c1"), user("b")}, 1, `"c2" (t_c2) has no result before message 3`},
		{"missing result at the end", []defs.Message{user("a"), calls("c1")}, 1, `"c1" (t_c1) has no result before message 2`},
		{"missing result before the next assistant message", []defs.Message{user("a"), calls("c1"), assistant("x")}, 1, "has no result before message 2"},
		{"duplicate result", []defs.Message{user("a"), calls("c1", "c2"), result("c1"), result("c1"), result("c2")}, 3, `second tool result for call "c1"`},
		{"duplicate call ids in one message", []defs.Message{user("a"), calls("c1", "c1")}, 1, `"c1" already used by message 1`},
		{"call id reused later", []defs.Message{user("a"), calls("c1"), result("c1"), calls("c1"), result("c1")}, 3, `"c1" already used by message 1`},
		{"call without id", []defs.Message{user("a"), {Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{Name: "x"}}}}, 1, `tool call to "x" has no id`},
		{"unknown role", []defs.Message{user("a"), {Role: "developer", Content: "x"}}, 1, `unknown role "developer"`},
		{"empty role", []defs.Message{{Content: "x"}}, 0, `unknown role ""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := runtime.ValidateMessages(tt.msgs)
			if tt.wantIndex < 0 {
				assert.NoError(t, err, "ValidateMessages")
				return
			}
			var re *llm.RequestError
			require.ErrorAs(t, err, &re, "ValidateMessages")
			assert.Equal(t, tt.wantIndex, re.Index, "RequestError.Index")
			assert.Contains(t, re.Reason, tt.wantIn, "RequestError.Reason")
		})
	}
}

func TestValidateDoesNotModify(t *testing.T) {
	msgs := []defs.Message{user("a"), calls("c1", "c2"), result("c2"), result("c1")}
	before := transcriptOf(msgs)
	require.NoError(t, runtime.ValidateMessages(msgs))
	assert.Empty(t, cmp.Diff(before, transcriptOf(msgs)), "ValidateMessages modified its input (-before +after)")
}

func FuzzValidateMessages(f *testing.F) {
	f.Add("u a c1 r1 r2 u")
	f.Add("r1 u a")
	f.Add("a c1 c1 r1")
	f.Fuzz(func(t *testing.T, script string) {
		msgs := runtime.ScriptMessages(script)
		err := runtime.ValidateMessages(msgs) // must not panic
		var re *llm.RequestError
		if err != nil && assert.ErrorAs(t, err, &re, "ValidateMessages: want a RequestError") {
			// The RequestError names one of the messages.
			assert.GreaterOrEqual(t, re.Index, 0, "RequestError.Index")
			assert.Less(t, re.Index, len(msgs), "RequestError.Index, against the %d messages", len(msgs))
		}
	})
}
