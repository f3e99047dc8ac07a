package runtime

import (
	"fmt"

	"github.com/reprompt/reprompt/defs"
)

// RequestError is a request that providers would reject, found before it is
// sent: a tool result without the call it answers, a call without its
// result, a role out of place.
type RequestError struct {
	// Index is the position of the offending message in Request.Messages.
	Index  int
	Reason string
}

func (e *RequestError) Error() string {
	return fmt.Sprintf("invalid request: message %d: %s", e.Index, e.Reason)
}

// ValidateMessages checks that msgs is a conversation providers accept:
// every tool message answers a call of the assistant message before it (the
// tool messages of one assistant message directly following it, in any
// order), every tool call has exactly one result, call ids are not reused,
// and roles are known.
func ValidateMessages(msgs []defs.Message) error {
	pending := map[string]bool{} // call id → answered
	open := -1                   // index of the assistant message whose calls are pending
	seen := map[string]int{}
	closeOpen := func(at int) error {
		if open < 0 {
			return nil
		}
		for _, c := range msgs[open].ToolCalls {
			if !pending[c.ID] {
				return &RequestError{Index: open, Reason: fmt.Sprintf("tool call %q (%s) has no result before message %d", c.ID, c.Name, at)}
			}
		}
		clear(pending)
		open = -1
		return nil
	}
	for i, m := range msgs {
		switch m.Role {
		case defs.RoleTool:
			if open < 0 {
				return &RequestError{Index: i, Reason: fmt.Sprintf("tool result for %q does not follow an assistant message with tool calls", m.ToolCallID)}
			}
			answered, ok := pending[m.ToolCallID]
			if !ok {
				return &RequestError{Index: i, Reason: fmt.Sprintf("tool result for %q answers no call of message %d", m.ToolCallID, open)}
			}
			if answered {
				return &RequestError{Index: i, Reason: fmt.Sprintf("second tool result for call %q", m.ToolCallID)}
			}
			pending[m.ToolCallID] = true
		case defs.RoleAssistant, defs.RoleUser, defs.RoleSystem:
			if err := closeOpen(i); err != nil {
				return err
			}
			if m.Role == defs.RoleAssistant && len(m.ToolCalls) > 0 {
				for _, c := range m.ToolCalls {
					if c.ID == "" {
						return &RequestError{Index: i, Reason: fmt.Sprintf("tool call to %q has no id", c.Name)}
					}
					if j, dup := seen[c.ID]; dup {
						return &RequestError{Index: i, Reason: fmt.Sprintf("tool call id %q already used by message %d", c.ID, j)}
					}
					seen[c.ID] = i
					pending[c.ID] = false
				}
				open = i
			}
		default:
			return &RequestError{Index: i, Reason: fmt.Sprintf("unknown role %q", m.Role)}
		}
	}
	return closeOpen(len(msgs))
}
