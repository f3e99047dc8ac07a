package defs

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
)

// Role is the author of a message in a transcript.
type Role string

// The roles a transcript may hold. The system prompt is not a message: it is
// rendered from system parts and variables and sent beside the messages.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
	RoleSystem    Role = "system"
)

// Message is one entry of a transcript.
//
// A message with Role RoleAssistant may carry ToolCalls; each one is answered
// by exactly one message with Role RoleTool whose ToolCallID matches. Meta holds
// runtime annotations (for example "trimmed") that are never sent to a model.
//
// Messages are values: the runtime shares transcript slices between steps and
// never mutates a message in place once it is in the transcript, so a slice of
// messages handed out by the runtime must be treated as read-only.
type Message struct {
	// Role is who wrote the message.
	Role Role `json:"role"`
	// Content is the message's text: empty for an assistant message that
	// only calls tools.
	Content string `json:"content,omitempty"`
	// Reasoning is the reasoning text a model returned beside an assistant
	// message, when the provider exposes it. It is kept for the record and
	// counted as tokens; an adapter sends it back only when configured to
	// (providers/openai: Config.ReplayReasoning).
	Reasoning string `json:"reasoning,omitempty"`
	// ToolCalls are the tools an assistant message asks to run, in order.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID is, in a RoleTool message, the ID of the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Name is, in a RoleTool message, the name of the tool that ran.
	Name string `json:"name,omitempty"`
	// IsError marks a RoleTool message that reports a failure (invalid
	// arguments, unknown or disabled tool, an error, a panic) rather than a
	// result. Trimming never cuts such a message.
	IsError bool `json:"is_error,omitempty"`
	// Meta holds runtime annotations ("trimmed", "reminder", "summary"),
	// never sent to a model as text, and what a provider requires back
	// with an assistant message (providers/anthropic keeps its thinking
	// blocks' signatures under "anthropic.thinking"); an effect that
	// rewrites a message keeps the keys it does not know. nil means none.
	Meta map[string]string `json:"meta,omitempty"`
}

// Identical reports whether m and o are the same message in every field, Meta
// included. Comparing a message with itself, or with a copy sharing its
// strings, costs no more than comparing pointers. (It is not named Equal so
// that go-cmp still compares messages field by field, with its options.)
func (m Message) Identical(o Message) bool {
	return m.Role == o.Role && m.Content == o.Content && m.Reasoning == o.Reasoning &&
		m.ToolCallID == o.ToolCallID && m.Name == o.Name && m.IsError == o.IsError &&
		slices.EqualFunc(m.ToolCalls, o.ToolCalls, func(x, y ToolCall) bool {
			return x.ID == y.ID && x.Name == y.Name && bytes.Equal(x.Arguments, y.Arguments)
		}) &&
		maps.Equal(m.Meta, o.Meta)
}

// ToolCall is a model's request to run one tool. Arguments is the raw JSON
// object the model produced; it is validated against the tool's schema
// before the tool runs.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// ToolResult is the outcome of one tool call.
type ToolResult struct {
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Content   string          `json:"content"`
	IsError   bool            `json:"is_error,omitempty"`
}

// Message returns the transcript message that carries r back to the model.
func (r ToolResult) Message() Message {
	return Message{Role: RoleTool, Content: r.Content, ToolCallID: r.CallID, Name: r.Name, IsError: r.IsError}
}

// UserMessage returns a message with role user.
func UserMessage(text string) Message { return Message{Role: RoleUser, Content: text} }

// AssistantMessage returns a message with role assistant and no tool calls.
func AssistantMessage(text string) Message { return Message{Role: RoleAssistant, Content: text} }
