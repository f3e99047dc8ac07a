package runtime

import (
	"fmt"

	"github.com/reprompt/reprompt/defs"
)

// checkPendingReply checks that reply, the pending reply of a checkpoint,
// is one a run could have saved after transcript: an assistant message
// whose calls, each given a result, make a valid conversation.
func checkPendingReply(transcript []defs.Message, reply defs.Message) error {
	if reply.Role != defs.RoleAssistant {
		return fmt.Errorf("role %q, want %q", reply.Role, defs.RoleAssistant)
	}
	msgs := make([]defs.Message, 0, len(transcript)+1+len(reply.ToolCalls))
	msgs = append(append(msgs, transcript...), reply)
	for _, c := range reply.ToolCalls {
		msgs = append(msgs, defs.Message{Role: defs.RoleTool, ToolCallID: c.ID, Name: c.Name})
	}
	return ValidateMessages(msgs)
}
