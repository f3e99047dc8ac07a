package snapshots

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/runtime"
)

// Reply is one scripted answer of a Model.
type Reply struct {
	// Text is the content of the reply.
	Text string
	// Reasoning is reasoning content, as some servers send.
	Reasoning string
	// Calls are the tool calls of the reply, in order.
	Calls []Call
	// Usage, if set, is reported as is; otherwise usage is estimated at
	// four characters a token.
	Usage *runtime.Usage
	// Finish, if set, is reported as the finish reason (NoFinish reports
	// none); otherwise it is FinishToolCalls for a reply with calls and
	// FinishStop for one without.
	Finish runtime.FinishReason
	// Err, if set, is returned instead of a reply.
	Err error
	// Func, if set, computes the reply from the request; the other fields
	// are ignored.
	Func func(req *runtime.Request) Reply
}

// Call is a scripted tool call.
type Call struct {
	// ID, if set, is the call's id; otherwise it is call_n, n counting the
	// calls across the script from 1.
	ID   string
	Name string
	// Args are the arguments: a json.RawMessage or string is sent as is
	// (so invalid JSON can be scripted), anything else is encoded as JSON;
	// nil sends {}.
	Args any
}

// NoFinish as Reply.Finish makes the model report no finish reason, as
// some servers do; a replayed recording uses it for such replies.
const NoFinish runtime.FinishReason = "\x00none"

// Text returns a reply with text and no tool calls: it ends a run.
func Text(text string) Reply { return Reply{Text: text} }

// CallTool returns a reply calling one tool.
func CallTool(name string, args any) Reply { return Reply{Calls: []Call{{Name: name, Args: args}}} }

// CallTools returns a reply calling several tools at once.
func CallTools(calls ...Call) Reply { return Reply{Calls: calls} }

// Fail returns a reply that makes the model call fail with err.
func Fail(err error) Reply { return Reply{Err: err} }

// Model is a scripted runtime.Model: it answers each request with the next
// reply of its script, gives tool calls deterministic ids (call_1, call_2,
// … across the script), and records every request it receives. It is safe
// for concurrent use; sub-agents share its script.
type Model struct {
	mu       sync.Mutex
	replies  []Reply
	next     int
	calls    int
	requests []*runtime.Request
}

// Script returns a model that answers with replies, in order.
func Script(replies ...Reply) *Model { return &Model{replies: replies} }

// Append adds replies to the end of the script.
func (m *Model) Append(replies ...Reply) {
	m.mu.Lock()
	m.replies = append(m.replies, replies...)
	m.mu.Unlock()
}

// ErrScriptExhausted is returned when a request arrives after the last
// scripted reply was used.
var ErrScriptExhausted = fmt.Errorf("scripted model: no reply left")

// Generate answers req with the next scripted reply.
func (m *Model) Generate(ctx context.Context, req *runtime.Request) (*runtime.Reply, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests = append(m.requests, req)
	if m.next >= len(m.replies) {
		return nil, fmt.Errorf("%w for request %d (script has %d replies)", ErrScriptExhausted, len(m.requests), len(m.replies))
	}
	sr := m.replies[m.next]
	m.next++
	if sr.Func != nil {
		sr = sr.Func(req)
	}
	if sr.Err != nil {
		return nil, sr.Err
	}
	msg := defs.Message{Role: defs.RoleAssistant, Content: sr.Text, Reasoning: sr.Reasoning}
	out := len(sr.Text)
	for _, c := range sr.Calls {
		m.calls++
		args, err := encodeArgs(c.Args)
		if err != nil {
			return nil, fmt.Errorf("scripted model: arguments of %s: %w", c.Name, err)
		}
		id := c.ID
		if id == "" {
			id = "call_" + strconv.Itoa(m.calls)
		}
		msg.ToolCalls = append(msg.ToolCalls, defs.ToolCall{ID: id, Name: c.Name, Arguments: args})
		out += len(c.Name) + len(args)
	}
	reply := &runtime.Reply{Message: msg, FinishReason: runtime.FinishStop}
	if len(msg.ToolCalls) > 0 {
		reply.FinishReason = runtime.FinishToolCalls
	}
	if sr.Finish == NoFinish {
		reply.FinishReason = ""
	} else if sr.Finish != "" {
		reply.FinishReason = sr.Finish
	}
	if sr.Usage != nil {
		reply.Usage = *sr.Usage
	} else {
		reply.Usage = runtime.Usage{InputTokens: EstimateTokens(req), OutputTokens: (out + 3) / 4}
	}
	return reply, nil
}

// Stream answers like Generate and delivers the reply's text word by word,
// then each tool call, to onDelta.
func (m *Model) Stream(ctx context.Context, req *runtime.Request, onDelta func(runtime.Delta)) (*runtime.Reply, error) {
	reply, err := m.Generate(ctx, req)
	if err != nil {
		return nil, err
	}
	if reply.Message.Reasoning != "" {
		onDelta(runtime.Delta{Reasoning: reply.Message.Reasoning})
	}
	for _, w := range strings.SplitAfter(reply.Message.Content, " ") {
		if w != "" {
			onDelta(runtime.Delta{Content: w})
		}
	}
	for i, c := range reply.Message.ToolCalls {
		onDelta(runtime.Delta{ToolCall: &runtime.ToolCallDelta{Index: i, ID: c.ID, Name: c.Name, Arguments: string(c.Arguments)}})
	}
	return reply, nil
}

func encodeArgs(a any) (json.RawMessage, error) {
	switch v := a.(type) {
	case nil:
		return json.RawMessage("{}"), nil
	case json.RawMessage:
		return v, nil
	case string:
		return json.RawMessage(v), nil
	}
	return json.Marshal(a)
}

// Requests returns the requests received so far, in order. The caller owns
// the slice, not the requests.
func (m *Model) Requests() []*runtime.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*runtime.Request(nil), m.requests...)
}

// Remaining returns the number of scripted replies not used yet.
func (m *Model) Remaining() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.replies) - m.next
}

// EstimateTokens estimates the input tokens of req at four characters a
// token. It is what the scripted model reports when a reply sets no Usage.
func EstimateTokens(req *runtime.Request) int {
	n := len(req.System)
	for _, m := range req.Messages {
		n += len(m.Content) + len(m.Role)
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Arguments)
		}
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	return (n + 3) / 4
}
