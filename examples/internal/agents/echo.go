package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
)

// EchoModel is the chat's offline model: a deterministic stand-in for a
// language model that answers from the request alone, with no script. Any
// input works, and a restarted process, given the request the crashed one
// would have sent, gets the reply the crashed one would have got.
//
// It reads the turn's question from the system prompt's <question>
// variable (declared through Prompt.Turn) and the user's last message:
//
//   - "remember X" (or "note X"): it calls remember with X, then confirms,
//     listing the <notes> variable when the request reminds it of them;
//   - a question about what to remember ("what do I remember?", "recall"):
//     it calls recall, then lists its result;
//   - anything else: it repeats what was said, with the turn's number.
type EchoModel struct{}

// Generate implements llm.Model.
func (EchoModel) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	last, calls := -1, 0
	for i, m := range req.Messages {
		switch {
		case m.Role == defs.RoleUser && !isReminder(m):
			last = i
		case m.Role == defs.RoleAssistant:
			calls += len(m.ToolCalls)
		}
	}
	question := variable(req.System, "question")
	if question == "" && last >= 0 {
		question = req.Messages[last].Content
	}
	var results []defs.Message
	reminded := false
	if last >= 0 {
		for _, m := range req.Messages[last+1:] {
			switch {
			case m.Role == defs.RoleTool:
				results = append(results, m)
			case isReminder(m):
				reminded = reminded || strings.Contains(m.Content, "<notes>")
			}
		}
	}
	if len(results) == 0 {
		if call, ok := toolFor(question, calls+1); ok {
			return reply(defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{call}}), nil
		}
		return reply(defs.AssistantMessage(echo(question, variable(req.System, "turn"), variable(req.System, "notes")))), nil
	}
	var answer []string
	for _, r := range results {
		answer = append(answer, answerFrom(r, reminded, variable(req.System, "notes")))
	}
	return reply(defs.AssistantMessage(strings.Join(answer, " "))), nil
}

// toolFor returns the tool call a question asks for, if any; n numbers the
// call in the conversation, so that its id is unique and the same in a
// process that resumes the conversation.
func toolFor(question string, n int) (defs.ToolCall, bool) {
	q := strings.TrimSpace(question)
	lower := strings.ToLower(q)
	id := fmt.Sprintf("call_%d", n)
	for _, verb := range []string{"remember ", "note "} {
		if strings.HasPrefix(lower, verb) && !strings.HasSuffix(lower, "?") {
			args, _ := json.Marshal(rememberArgs{Note: strings.TrimSpace(q[len(verb):])})
			return defs.ToolCall{ID: id, Name: "remember", Arguments: args}, true
		}
	}
	if strings.Contains(lower, "recall") || strings.Contains(lower, "remember") || strings.Contains(lower, "notes") {
		return defs.ToolCall{ID: id, Name: "recall", Arguments: json.RawMessage(`{}`)}, true
	}
	return defs.ToolCall{}, false
}

// echo is the answer to a question that needs no tool.
func echo(question, turn, notes string) string {
	s := fmt.Sprintf("You said %q (turn %s", question, turn)
	if n := len(splitNotes(notes)); n > 0 {
		s += fmt.Sprintf("; %d notes kept", n)
	}
	return s + ")."
}

// answerFrom is the answer to a tool result.
func answerFrom(r defs.Message, reminded bool, notes string) string {
	if r.IsError {
		return fmt.Sprintf("%s failed: %s.", r.Name, strings.TrimSuffix(strings.TrimPrefix(r.Content, "error: "), "."))
	}
	switch r.Name {
	case "remember":
		s := fmt.Sprintf("I will remember %q.", r.Content)
		if reminded { // the effect on the notes reminded the model of them
			s += " Notes: " + strings.Join(splitNotes(notes), ", ") + "."
		}
		return s
	case "recall":
		var got []string
		if err := json.Unmarshal([]byte(r.Content), &got); err != nil || len(got) == 0 {
			return "You asked me to remember nothing yet."
		}
		return "You asked me to remember: " + strings.Join(got, ", ") + "."
	}
	return fmt.Sprintf("%s said %s.", r.Name, r.Content)
}

func reply(m defs.Message) *llm.Reply {
	return &llm.Reply{Message: m, Usage: llm.Usage{InputTokens: 40, OutputTokens: 10}}
}

// isReminder reports a reminder the runtime appended to a request.
func isReminder(m defs.Message) bool {
	return m.Role == defs.RoleUser && (m.Meta["reminder"] != "" || strings.HasPrefix(m.Content, "<reminder>"))
}

// variable returns the text of a variable of a system prompt, "" if absent.
func variable(system, name string) string {
	re := regexp.MustCompile(`(?s)<` + regexp.QuoteMeta(name) + `>\n?(.*?)\n?</` + regexp.QuoteMeta(name) + `>`)
	if m := re.FindStringSubmatch(system); m != nil {
		return m[1]
	}
	return ""
}

// splitNotes splits the <notes> variable into notes.
func splitNotes(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "; ")
}
