package snapshots

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
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
	Usage *llm.Usage
	// Finish, if set, is reported as the finish reason (NoFinish reports
	// none); otherwise it is FinishToolCalls for a reply with calls and
	// FinishStop for one without.
	Finish llm.FinishReason
	// Err, if set, is returned instead of a reply.
	Err error
	// Func, if set, computes the reply from the request; the other fields
	// but Summary are ignored.
	Func func(req *llm.Request) Reply
	// Refusal, if set, is reported as the model's refusal
	// (llm.Reply.Refusal).
	Refusal string
	// Summary marks a reply to a summary request (llm.PurposeSummary):
	// it goes to the script's list of summaries, which only summary
	// requests use (see Model). Only Text, Usage, Err and Func apply; tool
	// calls make the request fail with ErrBadSummary.
	Summary bool
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
const NoFinish llm.FinishReason = "\x00none"

// Text returns a reply with text and no tool calls: it ends a run.
func Text(text string) Reply { return Reply{Text: text} }

// CallTool returns a reply calling one tool.
func CallTool(name string, args any) Reply { return Reply{Calls: []Call{{Name: name, Args: args}}} }

// CallTools returns a reply calling several tools at once.
func CallTools(calls ...Call) Reply { return Reply{Calls: calls} }

// Answer returns a reply giving v, encoded as JSON (a json.RawMessage or
// string is sent as is, so an invalid answer can be scripted), as the typed
// answer the request asks for (llm.Request.Output, declared with
// prompt.DefOutput), the way the request asks for it: as the reply's text
// when the output is a response_format (llm.OutputNative), as a call of
// the answer tool otherwise (llm.OutputTool). So one script serves
// both modes. A request without an output fails with an error saying so.
func Answer(v any) Reply {
	return Reply{Func: func(req *llm.Request) Reply {
		if req.Output == nil {
			return Reply{Err: fmt.Errorf("scripted model: snapshots.Answer for a request that asks for no typed answer (agent %q, step %d): declare one with prompt.DefOutput", req.Agent, req.Step)}
		}
		if req.Output.Mode == llm.OutputTool {
			return CallTool(req.Output.Name, v)
		}
		raw, err := encodeArgs(v)
		if err != nil {
			return Reply{Err: fmt.Errorf("scripted model: snapshots.Answer: %w", err)}
		}
		return Text(string(raw))
	}}
}

// Refuse returns a reply refusing to answer, as OpenAI's models do in the
// refusal field: text is the refusal (Reply.Refusal).
func Refuse(text string) Reply { return Reply{Text: text, Refusal: text} }

// Fail returns a reply that makes the model call fail with err.
func Fail(err error) Reply { return Reply{Err: err} }

// Summary returns a reply to a summary request (Request.Purpose is
// llm.PurposeSummary, as compaction sends): text is the summary.
func Summary(text string) Reply { return Reply{Text: text, Summary: true} }

// Model is a scripted llm.Model: it answers each request with the next
// reply of its script, gives tool calls deterministic ids (call_1, call_2,
// … across the script), and records every request it receives. It is safe
// for concurrent use.
//
// Replies made with Summary (or with Reply.Summary set) form a list of
// their own: summary requests (llm.PurposeSummary) take the next one,
// step requests the next other reply, so compaction never uses up a reply
// meant for a step. A request with nothing left to answer gets a
// *ScriptError.
//
// Sub-agents: without Agent, every agent of a run draws from the one
// script, in the order the requests arrive (fine for runs without
// sub-agents). Once Agent gave any sub-agent a script, each request is
// answered from the script of the agent it is for (Request.Agent): the
// run's own prompt from the replies given to Script, each sub-agent from
// its own, and a sub-agent without one gets a *ScriptError naming it.
type Model struct {
	mu       sync.Mutex
	main     script
	agents   map[string]*script // nil: one script for every agent
	calls    int
	requests []*llm.Request
	errs     []error
	shared   map[string]int // replies sub-agents took from the one script
	native   bool           // see NativeOutput
}

// WithNativeOutput makes the model say it takes a strict response_format
// (see NativeOutput) and returns m.
func (m *Model) WithNativeOutput() *Model {
	m.mu.Lock()
	m.native = true
	m.mu.Unlock()
	return m
}

// NativeOutput implements llm.NativeOutputModel: false unless
// WithNativeOutput was called (or a replayed recording was made with a
// model that took a response_format), so that with llm.OutputAuto a
// typed answer is asked for with the answer tool.
func (m *Model) NativeOutput() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.native
}

// script is the replies of one agent, and its summaries.
type script struct {
	replies, summaries []Reply
	next, nextSummary  int
	calls              int // tool calls numbered so far (agent scripts)
}

func (s *script) add(replies []Reply) {
	n := 0
	for _, r := range replies {
		if !r.Summary {
			n++
		}
	}
	s.replies = slices.Grow(s.replies, n) // one array, not a doubling per append
	for _, r := range replies {
		if r.Summary {
			s.summaries = append(s.summaries, r)
		} else {
			s.replies = append(s.replies, r)
		}
	}
}

func (s *script) remaining() int {
	return len(s.replies) - s.next + len(s.summaries) - s.nextSummary
}

// Script returns a model that answers with replies, in order (those made
// with Summary answer summary requests, in their own order).
func Script(replies ...Reply) *Model {
	m := &Model{}
	m.main.add(replies)
	return m
}

// Agent gives the sub-agent name (as declared with DefAgent) its own
// replies, summaries included, and returns m. Calling it again for the same
// name appends. From then on the model answers each request from the
// script of its agent (see Model); the replies given to Script and Append
// are the run's own prompt's. The sub-agent's tool calls get the ids
// NAME_call_1, NAME_call_2, … (unless a Call sets its ID). Instances of one sub-agent running at once
// (parallel tool calls) draw from its script in the order their requests
// arrive: answer them with Reply.Func to depend on the request, not on
// timing. Agent panics if name is empty.
func (m *Model) Agent(name string, replies ...Reply) *Model {
	if name == "" {
		panic("snapshots: Model.Agent with an empty agent name")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.agents == nil {
		m.agents = map[string]*script{}
	}
	s := m.agents[name]
	if s == nil {
		s = &script{}
		m.agents[name] = s
	}
	s.add(replies)
	return m
}

// Skip passes over the next n replies of the run's own prompt as if they
// had been given, and numbers the tool calls that follow as if they had:
// it is how a process that resumes a run, or continues a conversation,
// takes up the script where the process before it stopped. A *Model
// answers from its first reply in each process; a resumed runner asks for
// the replies after those its checkpoint holds: Skip as many as the run's
// prompt received before (one a step, runtime.Runner.StepNumber, plus one
// for a step resumed between its reply and its results; a summary reply
// is not counted here, see Summary). The calls of a skipped reply made
// by a function (Reply.Func, Answer) are not known without its request,
// and are not counted. It returns m.
func (m *Model) Skip(n int) *Model {
	m.mu.Lock()
	defer m.mu.Unlock()
	for ; n > 0 && m.main.next < len(m.main.replies); n-- {
		r := m.main.replies[m.main.next]
		// Generate counts every call, those with their own ID too (see
		// Call.ID).
		m.calls += len(r.Calls)
		m.main.next++
	}
	return m
}

// Append adds replies to the end of the script of the run's own prompt.
func (m *Model) Append(replies ...Reply) {
	m.mu.Lock()
	m.main.add(replies)
	m.mu.Unlock()
}

// Errors a *ScriptError wraps: what the script lacked.
var (
	// ErrScriptExhausted: a step request arrived after the agent's last
	// scripted reply was used.
	ErrScriptExhausted = errors.New("no reply left")
	// ErrNoSummary: a summary request arrived and no Summary reply was
	// left.
	ErrNoSummary = errors.New("no summary left")
	// ErrNoAgentScript: a sub-agent asked, and the model has agent scripts
	// but none for it.
	ErrNoAgentScript = errors.New("no agent script")
	// ErrBadSummary: the reply to a summary request has tool calls.
	ErrBadSummary = errors.New("a summary reply cannot call tools")
)

// ScriptError is a request the script of a Model could not answer. Generate
// returns it, and Err keeps it, because the runtime does not always end the
// run with it: compaction falls back on a summary made by rule, and a
// sub-agent's failure is an error result for its parent.
type ScriptError struct {
	// Request is the request's position among those the model received,
	// from 1.
	Request int
	// Agent, Step and Purpose are the request's: Agent "" is the run's
	// own prompt.
	Agent   string
	Step    int
	Purpose llm.Purpose
	// Err is ErrScriptExhausted, ErrNoSummary, ErrNoAgentScript or
	// ErrBadSummary.
	Err error
	// Hint says how to fix the script.
	Hint string
}

func (e *ScriptError) Error() string {
	who := "the run's prompt"
	if e.Agent != "" {
		who = fmt.Sprintf("agent %q", e.Agent)
	}
	what := "step"
	if e.Purpose != llm.PurposeStep {
		what = string(e.Purpose) + " request at step"
	}
	return fmt.Sprintf("scripted model: %v for request %d (%s, %s %d): %s", e.Err, e.Request, who, what, e.Step, e.Hint)
}

func (e *ScriptError) Unwrap() error { return e.Err }

// Err returns the requests the script could not answer so far, as
// *ScriptError values joined with errors.Join; nil if there were none.
// snapshots.Run fails the test with them even when the run did not end
// with them; a test calling runtime.Run itself should check Err.
func (m *Model) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return errors.Join(m.errs...)
}

// scriptErrors returns the errors Err joins.
func (m *Model) scriptErrors() []error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.errs)
}

// scriptFor returns the script that answers req. Called with m.mu held.
func (m *Model) scriptFor(req *llm.Request) (*script, *ScriptError) {
	if m.agents == nil || req.Agent == "" {
		return &m.main, nil
	}
	if s, ok := m.agents[req.Agent]; ok {
		return s, nil
	}
	names := slices.Sorted(maps.Keys(m.agents))
	return nil, &ScriptError{Err: ErrNoAgentScript, Hint: fmt.Sprintf(
		"the model has scripts for %s only; give this one its replies with Script(...).Agent(%q, ...)",
		strings.Join(quoteAll(names), ", "), req.Agent)}
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strconv.Quote(n)
	}
	return out
}

// next takes the reply for req from its script. Called with m.mu held.
func (m *Model) next(req *llm.Request) (Reply, *ScriptError) {
	s, serr := m.scriptFor(req)
	if serr != nil {
		return Reply{}, serr
	}
	whose := "the script"
	add := "add them to Script(...)"
	if m.agents != nil && req.Agent != "" {
		whose = fmt.Sprintf("the script of agent %q", req.Agent)
		add = fmt.Sprintf("add them with Agent(%q, ...)", req.Agent)
	}
	switch req.Purpose {
	case llm.PurposeStep:
		if s.next >= len(s.replies) {
			hint := fmt.Sprintf("%s has %d replies", whose, len(s.replies))
			if len(m.shared) > 0 {
				var took []string
				for _, name := range slices.Sorted(maps.Keys(m.shared)) {
					took = append(took, fmt.Sprintf("%q %d", name, m.shared[name]))
				}
				hint += fmt.Sprintf(", and sub-agents took some of them (%s): give each sub-agent its own with Agent(name, ...)", strings.Join(took, ", "))
			}
			return Reply{}, &ScriptError{Err: ErrScriptExhausted, Hint: hint}
		}
		if m.agents == nil && req.Agent != "" {
			if m.shared == nil {
				m.shared = map[string]int{}
			}
			m.shared[req.Agent]++
		}
		s.next++
		return s.replies[s.next-1], nil
	case llm.PurposeSummary:
		if s.nextSummary >= len(s.summaries) {
			return Reply{}, &ScriptError{Err: ErrNoSummary, Hint: fmt.Sprintf(
				"%s has %d summaries; summaries are scripted with snapshots.Summary(...): %s", whose, len(s.summaries), add)}
		}
		s.nextSummary++
		return s.summaries[s.nextSummary-1], nil
	}
	return Reply{}, &ScriptError{Err: fmt.Errorf("unknown request purpose %q", req.Purpose), Hint: "the scripted model answers steps and summaries"}
}

// Generate answers req with the next reply of its agent's script: a
// Summary reply for a summary request, another reply for a step.
func (m *Model) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests = append(m.requests, req)
	fail := func(e *ScriptError) error {
		e.Request, e.Agent, e.Step, e.Purpose = len(m.requests), req.Agent, req.Step, req.Purpose
		m.errs = append(m.errs, e)
		return e
	}
	sr, serr := m.next(req)
	if serr != nil {
		return nil, fail(serr)
	}
	// Call ids: call_1, call_2, … across the script; with agent scripts, a
	// sub-agent numbers its own, NAME_call_1, …, so that sub-agents running
	// at once do not make each other's ids depend on timing.
	counter, idPrefix := &m.calls, "call_"
	if m.agents != nil && req.Agent != "" {
		counter, idPrefix = &m.agents[req.Agent].calls, req.Agent+"_call_"
	}
	if sr.Func != nil {
		sr = sr.Func(req)
	}
	if sr.Err != nil {
		return nil, sr.Err
	}
	if req.Purpose == llm.PurposeSummary && len(sr.Calls) > 0 {
		return nil, fail(&ScriptError{Err: ErrBadSummary, Hint: fmt.Sprintf("the reply calls %s", sr.Calls[0].Name)})
	}
	// A reply with one call, the most common, is one allocation with its
	// call.
	var reply *llm.Reply
	msg := defs.Message{Role: defs.RoleAssistant, Content: sr.Text, Reasoning: sr.Reasoning}
	if len(sr.Calls) == 1 {
		rc := new(replyWithCall)
		reply, msg.ToolCalls = &rc.reply, rc.call[:0]
	}
	out := len(sr.Text)
	for _, c := range sr.Calls {
		*counter++
		args, err := encodeArgs(c.Args)
		if err != nil {
			return nil, fmt.Errorf("scripted model: arguments of %s: %w", c.Name, err)
		}
		id := c.ID
		if id == "" {
			var buf [32]byte // one allocation for the id, not two
			id = string(strconv.AppendInt(append(buf[:0], idPrefix...), int64(*counter), 10))
		}
		if msg.ToolCalls == nil {
			msg.ToolCalls = make([]defs.ToolCall, 0, len(sr.Calls))
		}
		msg.ToolCalls = append(msg.ToolCalls, defs.ToolCall{ID: id, Name: c.Name, Arguments: args})
		out += len(c.Name) + len(args)
	}
	if reply == nil {
		reply = new(llm.Reply)
	}
	*reply = llm.Reply{Message: msg, FinishReason: llm.FinishStop, Refusal: sr.Refusal}
	if len(msg.ToolCalls) > 0 {
		reply.FinishReason = llm.FinishToolCalls
	}
	if sr.Finish == NoFinish {
		reply.FinishReason = ""
	} else if sr.Finish != "" {
		reply.FinishReason = sr.Finish
	}
	if sr.Usage != nil {
		reply.Usage = *sr.Usage
	} else {
		reply.Usage = llm.Usage{InputTokens: EstimateTokens(req), OutputTokens: (out + 3) / 4}
	}
	return reply, nil
}

// Stream answers like Generate and delivers the reply's text word by word,
// then each tool call, to onDelta.
func (m *Model) Stream(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Reply, error) {
	reply, err := m.Generate(ctx, req)
	if err != nil {
		return nil, err
	}
	if reply.Message.Reasoning != "" {
		onDelta(llm.Delta{Reasoning: reply.Message.Reasoning})
	}
	for _, w := range strings.SplitAfter(reply.Message.Content, " ") {
		if w != "" {
			onDelta(llm.Delta{Content: w})
		}
	}
	for i, c := range reply.Message.ToolCalls {
		onDelta(llm.Delta{ToolCall: &llm.ToolCallDelta{Index: i, ID: c.ID, Name: c.Name, Arguments: string(c.Arguments)}})
	}
	return reply, nil
}

// replyWithCall is a reply and the array of its one tool call.
type replyWithCall struct {
	reply llm.Reply
	call  [1]defs.ToolCall
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
func (m *Model) Requests() []*llm.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*llm.Request(nil), m.requests...)
}

// Remaining returns the number of scripted replies not used yet, summaries
// and the replies of every agent's script included.
func (m *Model) Remaining() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.main.remaining()
	for _, s := range m.agents {
		n += s.remaining()
	}
	return n
}

// EstimateTokens estimates the input tokens of req at four characters a
// token. It is what the scripted model reports when a reply sets no Usage.
func EstimateTokens(req *llm.Request) int {
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
