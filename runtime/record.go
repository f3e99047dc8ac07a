package runtime

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/state"
)

// AgentRun is the record of a sub-agent that a tool call ran (a tool
// declared with DefAgent), kept in the parent's Step.Agents.
type AgentRun struct {
	// CallID is the id of the parent's tool call that ran the sub-agent;
	// Name is the sub-agent's name.
	CallID string
	Name   string
	// Steps are the records of the sub-agent's steps, as its own run
	// returned them (its own sub-agents and summaries included). When the
	// sub-agent failed, the last one is the failing step's, as far as it
	// went.
	Steps []*Step
	// Err is the error the sub-agent's run ended with; nil if it
	// completed. The parent's model receives it as an error result.
	Err error
}

// Summary is the record of one completion that an effect asked for through
// effects.Step.Model (compaction's summaries), answered by
// Config.Summarizer or the run's model.
type Summary struct {
	// Request is what was sent; its Purpose is llm.PurposeSummary.
	Request *llm.Request
	// Reply is the answer; nil when the call failed.
	Reply *llm.Reply
	// Err is the error of a failed call; the effect that asked decides
	// what to do with it (compaction falls back on a summary made by rule).
	Err error
}

// recordAgent keeps the record of a sub-agent run by the tool call callID
// until the step takes it. Sub-agents of parallel calls record
// concurrently.
func (r *Runner) recordAgent(callID, name string, steps []*Step, err error) {
	r.recMu.Lock()
	r.agentRuns = append(r.agentRuns, &AgentRun{CallID: callID, Name: name, Steps: steps, Err: err})
	r.recMu.Unlock()
}

// takeAgentRuns returns the sub-agent runs of calls, in call order, and
// forgets every run recorded so far (a run of a call that timed out and
// finished later belongs to no step).
func (r *Runner) takeAgentRuns(calls []defs.ToolCall) []*AgentRun {
	r.recMu.Lock()
	runs := r.agentRuns
	r.agentRuns = nil
	r.recMu.Unlock()
	if len(runs) == 0 {
		return nil
	}
	var out []*AgentRun
	for _, c := range calls {
		for _, a := range runs {
			if a.CallID == c.ID {
				out = append(out, a)
			}
		}
	}
	return slices.Clip(out)
}

// recordSummary keeps the record of a summary request until the step
// takes it.
func (r *Runner) recordSummary(req *llm.Request, reply *llm.Reply, err error) {
	r.recMu.Lock()
	r.summaries = append(r.summaries, &Summary{Request: req, Reply: reply, Err: err})
	r.recMu.Unlock()
}

// attachSummaries moves the summaries recorded since the last step into s
// (dropped when s is nil: the step left no record).
func (r *Runner) attachSummaries(s *Step) {
	r.recMu.Lock()
	sums := r.summaries
	r.summaries = nil
	r.recMu.Unlock()
	if s != nil {
		s.Summaries = append(s.Summaries, sums...)
	}
}

// Step records what happened at one step. It is the unit of the iterator,
// of snapshots and of logs.
type Step struct {
	Number int
	Reply  *llm.Reply
	// ToolResults are the results of the reply's tool calls, in call order.
	ToolResults []defs.ToolResult
	// Agents are the sub-agents the reply's tool calls ran, in call order,
	// each with the records of its steps.
	Agents []*AgentRun
	// ToolErrors are the Go errors behind the error results of tools that
	// failed when they ran (returned an error, panicked, timed out), by
	// call id, for the developer: a *ToolPanicError keeps the source
	// location of the panic, which the model's text leaves out. Arguments
	// that failed validation, unknown and disabled tools have no entry. nil
	// when no tool failed.
	ToolErrors map[string]error
	// State is a shallow copy of the state after the step. Steps after
	// which the state did not change share one map: read-only.
	State map[string]any
	// Effects are the effects that ran, both phases, and why.
	Effects []effects.Ran
	// Summaries are the completions the effects asked for at this step
	// through effects.Step.Model (compaction's summaries), in order.
	Summaries []*Summary
	// Disabled and Reminded are the definitions disabled and reminded for
	// this step's request.
	Disabled []defs.Ref
	Reminded []defs.Ref
	// Committed reports that an effect rewrote the transcript at this step.
	Committed bool
	// Recovered reports that the provider rejected the request as too long
	// and it was sent again after the Recovery effects compacted it.
	Recovered bool
	// InputTokens is the runtime's count of the request's tokens (system
	// prompt, tool schemas, messages).
	InputTokens int
	// PrefixTokens is how many of them the request shares as an exact
	// prefix with the previous step's request: what a provider's prompt
	// cache can reuse.
	PrefixTokens int
	// BilledInput estimates the input tokens billed at full price: the
	// tokens not in the shared prefix, plus the shared ones at
	// Config.CachedInputFraction.
	BilledInput float64
	// Cache says, in one line, why the request's prefix broke before the
	// end of the previous step's request, so that a prompt cache could
	// reuse only PrefixTokens of it: the definition declared, changed or
	// removed, the effect that disabled or reminded something, the commit
	// that rewrote the transcript, the tool list that changed. Empty when
	// the request extends the previous one, and at a run's first request.
	Cache string
	// Resumed reports a step that was interrupted by a crash after the
	// model's reply and completed by Resume; Interrupted lists the calls
	// that got an "interrupted" result instead of running.
	Resumed     bool
	Interrupted []string
	// Awaiting lists the calls of the reply that wait for a person's
	// decision (prompt.NeedsApproval): the step paused. ToolResults then
	// hold the results of the reply's other calls, which ran; the step is
	// not Done, and a later record of the same Number, with Decisions,
	// completes it once every call is decided (see Runner.Approve).
	Awaiting []PendingApproval
	// Decisions are, on the record that completes a paused step, the
	// decisions on its calls that needed approval, in call order. Its
	// ToolResults are the results of all the reply's calls.
	Decisions []Decision
	// Output is the typed answer accepted at this step (see
	// prompt.DefOutput and Output): the reply's text or the answer tool's
	// arguments. nil for every other step.
	Output json.RawMessage
	// Done reports that the run ended with this step: the conversation's
	// turn is over (a message sent continues it, see Runner.Continue).
	Done bool
	// Turn is the conversation's turn the step belongs to (see
	// prompt.Turn); Sent are the user messages that joined the transcript
	// at the start of this step: the turn's message, or messages sent while
	// the run went on (Runner.Send) or posted through the store (Post).
	Turn int
	Sent []defs.Message

	sent    bool         // a request was sent: request and msgs hold it
	request llm.Request  // what was sent, but its Messages (nil); see Request
	msgs    *reqMessages // its messages
}

// Request returns what was sent at the step; nil for a step interrupted by
// a crash after the model's reply and completed by Resume (Resumed is set),
// and for the record that completes a paused step (Decisions is set: the
// paused step's record holds the request).
//
// A record keeps of its request's messages only what changed since the
// previous step's request, so that the records of a long run whose
// transcript is rewritten at every step (trimming) keep memory linear in
// its steps, not quadratic. Each call therefore builds Messages anew, in
// time linear in their number: call it once per use, not in a loop. The
// returned request is the caller's; its messages share their strings and
// tool calls with the transcript: read-only.
func (s *Step) Request() *llm.Request {
	if !s.sent {
		return nil
	}
	req := s.request
	req.Messages = s.msgs.slice()
	return &req
}

// RequestMessages returns the messages of the step's request
// (Request().Messages) without building the rest of the request: nil when
// the record sent no request. Like Request, each call builds them anew.
func (s *Step) RequestMessages() []defs.Message {
	if !s.sent {
		return nil
	}
	return s.msgs.slice()
}

// RequestOutput returns the typed answer the step's request asked for
// (Request().Output) without building the request: nil when it asked for
// none or the record sent no request. It is the record's: read-only.
func (s *Step) RequestOutput() *llm.OutputSpec {
	if !s.sent {
		return nil
	}
	return s.request.Output
}

// SetRequest sets the request of a record made by hand (tests, tools that
// build records): s keeps req, and Request returns a copy of it with
// req.Messages copied. nil clears it. The runtime records the requests it
// sends itself.
func (s *Step) SetRequest(req *llm.Request) {
	s.sent, s.request, s.msgs = req != nil, llm.Request{}, nil
	if req == nil {
		return
	}
	s.request = *req
	s.request.Messages = nil
	s.msgs = newReqMessages(nil, nil, req.Messages)
}

// recordRequest records req, just rendered, as the request of rec: its
// messages as a change of the previous request's.
func (r *Runner) recordRequest(rec *Step, req *llm.Request) {
	rec.sent, rec.request = true, *req
	rec.request.Messages = nil
	rec.msgs = newReqMessages(r.lastReq, r.lastMsgs, req.Messages)
	r.lastReq, r.lastMsgs = rec.msgs, req.Messages
}

// reqMessages are the messages of a step's request, kept as what changed
// since those of the previous request: the first keep messages of prev,
// then tail (a copy of its own, so that no record keeps a transcript's
// array alive). A nil *reqMessages holds no messages.
//
// A request that keeps less than half of the previous one (after a
// compaction) starts a new chain: the records before it are then freed
// with their steps (a conversation's Runner keeps only the last chain),
// and building Messages walks back no further than the last compaction.
type reqMessages struct {
	prev *reqMessages
	keep int
	tail []defs.Message
}

// newReqMessages returns msgs as a change of prev, whose messages are
// prevMsgs.
func newReqMessages(prev *reqMessages, prevMsgs, msgs []defs.Message) *reqMessages {
	k := 0
	switch {
	case prev == nil || len(prevMsgs) == 0 || len(msgs) == 0:
	case &prevMsgs[0] == &msgs[0]:
		// The same array: a transcript message is never changed in place.
		k = min(len(prevMsgs), len(msgs))
	default:
		for k < len(prevMsgs) && k < len(msgs) && sameCopy(&prevMsgs[k], &msgs[k]) {
			k++
		}
	}
	if 2*k < len(msgs) {
		prev, k = nil, 0
	}
	return &reqMessages{prev: prev, keep: k, tail: slices.Clone(msgs[k:])}
}

// sameCopy reports whether a and b are identical messages, fast when one
// is a copy of the other (a transcript rewritten by an effect copies the
// messages it keeps: their strings, tool calls and Meta are the same).
func sameCopy(a, b *defs.Message) bool {
	if a.Role == b.Role && a.Content == b.Content && a.Reasoning == b.Reasoning && a.ToolCallID == b.ToolCallID &&
		a.Name == b.Name && a.IsError == b.IsError && len(a.ToolCalls) == len(b.ToolCalls) &&
		(len(a.ToolCalls) == 0 || &a.ToolCalls[0] == &b.ToolCalls[0]) && sameMeta(a.Meta, b.Meta) {
		return true
	}
	return a.Identical(*b)
}

func (m *reqMessages) len() int {
	if m == nil {
		return 0
	}
	return m.keep + len(m.tail)
}

// slice returns the messages, in a new slice.
func (m *reqMessages) slice() []defs.Message {
	n := m.len()
	if n == 0 {
		return nil
	}
	out := make([]defs.Message, n)
	for p, end := m, n; end > 0; p = p.prev {
		if end > p.keep {
			copy(out[p.keep:end], p.tail)
			end = p.keep
		}
	}
	return out
}

// Result is the outcome of a completed run.
type Result struct {
	// Text is the content of the last reply, or the typed answer (JSON)
	// of a run that ended with one (see Output).
	Text string
	// Steps are the records of the steps this Run (or Continue) ran: in a
	// conversation, those of the turn; after Resume, those run since. The
	// store keeps the records of every step of a session
	// (session.Store's steps).
	Steps []*Step
	// Transcript is the final transcript (read-only).
	Transcript []defs.Message
	// Usage sums the usage of every model call.
	Usage llm.Usage
	// Stats are the run's totals.
	Stats effects.RunStats
	// Awaiting lists the tool calls the run paused for (see
	// prompt.NeedsApproval), nil if it did not pause. A paused run did not
	// end: decide each call with Runner.Approve or Runner.Deny and call
	// Runner.Run again (or, with a store, runtime.Resume in another
	// process) to continue it.
	Awaiting []PendingApproval

	store  *state.Store    // the prompt's state, read by StateOf
	answer json.RawMessage // the run's last typed answer, read by Output
}

// StateOf returns the value of a state key as the run left it, typed as
// the prompt function declared it:
//
//	res, err := runtime.Run(ctx, model, agent, cfg)
//	count, err := runtime.StateOf[int](res, "count")
//
// The error is a *state.TypeError when the key holds another type and a
// *state.NotFoundError when it is not set (or res is nil or was not made by
// a run). It is a function, not a method, because Go methods cannot take
// type parameters.
func StateOf[T any](res *Result, key string) (T, error) {
	if res == nil || res.store == nil {
		var zero T
		return zero, &state.NotFoundError{Key: key}
	}
	return state.Get[T](context.Background(), res.store, key)
}
