package temporal

import (
	"encoding/json"
	"fmt"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/session"
)

// Message is a defs.Message as it travels in Temporal payloads: encoded
// with the session package's encoding (session.EncodeMessage), which keeps
// tool-call arguments byte for byte even when they are not valid JSON.
type Message struct{ defs.Message }

// MarshalJSON encodes m with session.EncodeMessage.
func (m Message) MarshalJSON() ([]byte, error) { return session.EncodeMessage(m.Message) }

// UnmarshalJSON decodes m with session.DecodeMessage.
func (m *Message) UnmarshalJSON(data []byte) error {
	msg, err := session.DecodeMessage(data)
	if err != nil {
		return err
	}
	m.Message = msg
	return nil
}

func wrapMessages(msgs []defs.Message) []Message {
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		out[i] = Message{m}
	}
	return out
}

func unwrapMessages(msgs []Message) []defs.Message {
	out := make([]defs.Message, len(msgs))
	for i, m := range msgs {
		out[i] = m.Message
	}
	return out
}

// request is an llm.Request in a payload.
type request struct {
	System   string         `json:"system,omitempty"`
	Messages []Message      `json:"messages"`
	Tools    []llm.ToolSpec `json:"tools,omitempty"`
	Agent    string         `json:"agent,omitempty"`
	Step     int            `json:"step"`
	Purpose  llm.Purpose    `json:"purpose,omitempty"`
	// What the provider adapters read for prompt caching.
	SessionID string `json:"session_id,omitempty"`
	Committed int    `json:"committed,omitempty"`
	Repeated  int    `json:"repeated,omitempty"`
	// The typed answer asked for (prompt.DefOutput), for an adapter that
	// asks for it natively.
	Output *llm.OutputSpec `json:"output,omitempty"`
}

func wireRequest(r *llm.Request) request {
	return request{System: r.System, Messages: wrapMessages(r.Messages), Tools: r.Tools, Agent: r.Agent, Step: r.Step, Purpose: r.Purpose,
		SessionID: r.SessionID, Committed: r.Committed, Repeated: r.Repeated, Output: r.Output}
}

func (r request) request() *llm.Request {
	return &llm.Request{System: r.System, Messages: unwrapMessages(r.Messages), Tools: r.Tools, Agent: r.Agent, Step: r.Step, Purpose: r.Purpose,
		SessionID: r.SessionID, Committed: r.Committed, Repeated: r.Repeated, Output: r.Output}
}

// reply is an llm.Reply in a payload.
type reply struct {
	Message      Message          `json:"message"`
	Usage        llm.Usage        `json:"usage"`
	FinishReason llm.FinishReason `json:"finish_reason,omitempty"`
	ID           string           `json:"id,omitempty"`
}

// toolCall is a defs.ToolCall in a payload: the arguments as bytes, valid
// JSON or not.
type toolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments []byte `json:"arguments"`
}

// Checkpoint is a session.Checkpoint as a workflow carries it across
// continue-as-new: the head and the messages in the session package's
// encoding (session.EncodeHead, session.EncodeMessage), the format every
// session.Store keeps.
type Checkpoint struct {
	Head     json.RawMessage   `json:"head"`
	Messages []json.RawMessage `json:"messages"`
}

// EncodeCheckpoint returns cp in the session package's encoding.
func EncodeCheckpoint(cp *session.Checkpoint) (*Checkpoint, error) {
	head, err := session.EncodeHead(cp)
	if err != nil {
		return nil, err
	}
	out := &Checkpoint{Head: head, Messages: make([]json.RawMessage, len(cp.Transcript))}
	for i, m := range cp.Transcript {
		if out.Messages[i], err = session.EncodeMessage(m); err != nil {
			return nil, fmt.Errorf("checkpoint message %d: %w", i, err)
		}
	}
	return out, nil
}

// Decode returns the checkpoint c encodes. A damaged one is a
// *session.CorruptError; one from a later version a *session.VersionError.
func (c *Checkpoint) Decode() (*session.Checkpoint, error) {
	h, err := session.DecodeHead(c.Head)
	if err != nil {
		return nil, &session.CorruptError{Err: err}
	}
	return session.Load(h.Checkpoint.SessionID, h.Checkpoint.Seq, c.Head, func(root, generation, count int) ([]session.Row, error) {
		rows := make([]session.Row, 0, min(count, len(c.Messages)))
		for i := 0; i < count && i < len(c.Messages); i++ {
			rows = append(rows, session.Row{Index: i, Data: c.Messages[i]})
		}
		return rows, nil
	})
}
