// Package viewer reads what a run did, step by step, from a session store,
// a golden step file (package snapshots' format) or a recording, and shows
// it as one self-contained HTML page (HTML); package showtext writes it as
// text. It is the library behind cmd/reprompt.
//
// Every source becomes a Run: its steps, each with the request's messages
// (indices into one pool of distinct messages, so that a long session
// does not repeat its history at every step), what changed in the request
// since the previous step, the effects that ran and why, the state and its
// changes, the tool calls, tokens, commits and compactions, and
// sub-agents. What a source does not hold is left empty and said so in
// Run.Notes.
package viewer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"maps"
	"slices"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/internal/steprec"
)

// Run is a run as the viewer shows it.
type Run struct {
	// Title names the run: the session id or the file's name.
	Title string `json:"title"`
	// Source says where it was read from.
	Source string `json:"source"`
	// Steps are the steps, in order.
	Steps []*Step `json:"steps"`
	// Messages is the pool of distinct messages the steps refer to.
	Messages []Message `json:"messages"`
	// Notes say what could not be read and what the source does not hold.
	Notes []string `json:"notes,omitempty"`
	// Done reports that the run ended; Error is the error it ended with.
	Done  bool   `json:"done"`
	Error string `json:"error,omitempty"`

	index map[uint64][]int // message hash → pool indices
	seed  maphash.Seed
	memo  transcriptMemo // FromStore's
}

// Message is one message of a request, a reply or a transcript.
type Message struct {
	Role      string            `json:"role"`
	Content   string            `json:"content,omitempty"`
	Reasoning string            `json:"reasoning,omitempty"`
	Calls     []Call            `json:"calls,omitempty"`
	CallID    string            `json:"call_id,omitempty"`
	Name      string            `json:"name,omitempty"`
	IsError   bool              `json:"is_error,omitempty"`
	Meta      map[string]string `json:"meta,omitempty"`
}

// Call is a tool call of an assistant message.
type Call struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Args string `json:"args"`
}

// Step is one step of a run.
type Step struct {
	Number int `json:"n"`
	// Label says what the step is when it is not a step of the run's own
	// prompt (in a recording: "summary", "agent NAME").
	Label string `json:"label,omitempty"`
	// Turn is the conversation's turn the step belongs to, from 0, and
	// TurnStart reports that the step is the first of its turn. Sent are
	// the user messages that joined the transcript at the step's start: on
	// the first step of a turn, the turn's message first; on any other, the
	// messages sent while the run went on (steering). A run that is not a
	// conversation has every step in turn 0 and no Sent.
	Turn      int      `json:"turn,omitempty"`
	TurnStart bool     `json:"turn_start,omitempty"`
	Sent      []string `json:"sent,omitempty"`
	// Asks are the questions the step's tool calls asked the user
	// (prompt.Ask) and the approvals they waited for, with the answers and
	// decisions given, in call order.
	Asks []Ask `json:"asks,omitempty"`
	// Request are the request's messages, as indices into Run.Messages;
	// nil when the source does not hold them.
	Request []int `json:"request"`
	// Diff is what changed in Request since the previous step's.
	Diff Diff `json:"diff"`
	// System is the system prompt when the source holds it (golden files);
	// SystemChanged reports that it differs from the previous step's.
	System        string `json:"system,omitempty"`
	SystemChanged bool   `json:"system_changed,omitempty"`
	// Tools are the tools offered; ToolsOn and ToolsOff those offered or
	// withdrawn since the previous step.
	Tools    []string `json:"tools,omitempty"`
	ToolsOn  []string `json:"tools_on,omitempty"`
	ToolsOff []string `json:"tools_off,omitempty"`
	// Disabled and Reminded name definitions ("kind:name").
	Disabled []string `json:"disabled,omitempty"`
	Reminded []string `json:"reminded,omitempty"`
	Effects  []Effect `json:"effects,omitempty"`
	// State is the state after the step, key by key, as JSON; Changes the
	// keys whose value the step changed.
	State   map[string]string `json:"state,omitempty"`
	Changes []Change          `json:"changes,omitempty"`
	// Notes are what else the step records, one line each: the typed
	// answer a request asks for and the answer given, a refusal, the calls
	// awaiting a person's approval and the decisions on them.
	Notes []string `json:"notes,omitempty"`
	// Reply is the model's reply, an index into Run.Messages; -1 if none.
	Reply  int        `json:"reply"`
	Finish string     `json:"finish,omitempty"`
	Calls  []ToolCall `json:"calls,omitempty"`
	// InputTokens and PrefixTokens are the runtime's counts (PrefixTokens:
	// shared with the previous request, cacheable). When the source has no
	// record of them, they come from the provider's usage and Estimated is
	// set.
	InputTokens  int  `json:"input"`
	PrefixTokens int  `json:"prefix"`
	Estimated    bool `json:"estimated,omitempty"`
	OutputTokens int  `json:"output,omitempty"`
	// CacheMiss says why the request's prefix broke before the end of the
	// previous request's (steprec.Step.Cache); empty when it did not.
	CacheMiss string `json:"cache_miss,omitempty"`
	// Commits are the rewrites of the transcript at this step; a
	// compaction is a commit to fewer messages.
	Commits    []Commit `json:"commits,omitempty"`
	Compaction bool     `json:"compaction,omitempty"`
	Recovered  bool     `json:"recovered,omitempty"`
	Summaries  int      `json:"summaries,omitempty"`
	Agents     []*Agent `json:"agents,omitempty"`
	DurationMS float64  `json:"ms,omitempty"`
	// Resumed reports a step interrupted by a crash after the model's reply
	// and completed by a resume; Interrupted names its calls that got an
	// "interrupted" result instead of running.
	Resumed     bool     `json:"resumed,omitempty"`
	Interrupted []string `json:"interrupted,omitempty"`
	// Stopped says how a run that has not ended stopped in this step, its
	// last: "paused" for a person's decision or answer, "interrupted" (a
	// crash, or a stop) before its tool calls completed.
	Stopped string `json:"stopped,omitempty"`
	// Damage says what of the step could not be read, and where.
	Damage string `json:"damage,omitempty"`
	// Record is the step's record (steprec.Step) as the source holds it,
	// without the parts the fields above show in their own form (effects,
	// messages, calls, state, sub-agents): any other field of the record,
	// and any field added to it, reaches the page here. nil when the
	// source has no record of the step.
	Record *steprec.Step `json:"record,omitempty"`

	systemID  string // identifies the system prompt; "" if unknown
	committed bool   // a golden file says the transcript was committed
}

// Mark says, in a few words, how s was cut short, for the step list:
// "crashed, resumed" for a step a crash interrupted after the model's
// reply and a resume completed, "interrupted" or "paused" for the step a
// run that has not ended stopped in (Stopped); "" for any other step.
func (s *Step) Mark() string {
	switch {
	case s.Stopped != "":
		return s.Stopped
	case s.Resumed:
		return "crashed, resumed"
	}
	return ""
}

// Diff is what changed in a request since the previous one.
type Diff struct {
	// Shared is how many leading messages the two requests share.
	Shared int `json:"shared"`
	// Added and Removed are pool indices of messages only in this request
	// and only in the previous one; Rewritten pairs a message of the
	// previous request ([0]) with the one that replaced it ([1]).
	Added     []int    `json:"added,omitempty"`
	Removed   []int    `json:"removed,omitempty"`
	Rewritten [][2]int `json:"rewritten,omitempty"`
}

// Effect is an effect that ran, and why.
type Effect struct {
	ID     string `json:"id"`
	Phase  string `json:"phase,omitempty"`
	Site   string `json:"site,omitempty"`
	Reason string `json:"reason"`
}

// Change is a state key the step changed. Before is empty for a new key,
// After for a removed one.
type Change struct {
	Key    string `json:"key"`
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
}

// ToolCall is a tool call of a step, with its result.
type ToolCall struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Args    string `json:"args"`
	Result  string `json:"result"`
	IsError bool   `json:"is_error,omitempty"`
	// Error is the Go error behind an error result, when recorded.
	Error      string  `json:"error,omitempty"`
	DurationMS float64 `json:"ms,omitempty"`

	resultMsg int // 1 + the pool index of the result's message; 0 if none
}

// Ask is a tool call that waited for the user: a question it asked
// (prompt.Ask) or an approval.
type Ask struct {
	CallID string `json:"call_id"`
	Tool   string `json:"tool,omitempty"`
	// Question is the question asked; "" for an approval, or when the
	// source does not hold it (a golden file).
	Question string `json:"question,omitempty"`
	// Answer is the answer given, as one line of JSON; "" until answered.
	Answer string `json:"answer,omitempty"`
	// Decision is "awaiting", "answered", "approved" or "denied".
	Decision string `json:"decision"`
	// Reason is, for a denied call, what the model got as its result.
	Reason string `json:"reason,omitempty"`
}

// Turn is one turn of a conversation: the user's message and the steps
// that answered it.
type Turn struct {
	Number int
	// Message is the user's message that started the turn; "" when the
	// source does not hold it.
	Message string
	// Steps are the turn's steps, in order; the caller must not modify
	// them.
	Steps []*Step
}

// Conversation reports whether run is a conversation: a step records the
// user messages that joined it, or a turn after the first.
func (run *Run) Conversation() bool {
	for _, s := range run.Steps {
		if len(s.Sent) > 0 || s.Turn > 0 {
			return true
		}
	}
	return false
}

// Turns returns the turns of run, in order; a run that is not a
// conversation is one turn.
func (run *Run) Turns() []Turn {
	var out []Turn
	for _, s := range run.Steps {
		if s.TurnStart || len(out) == 0 {
			t := Turn{Number: s.Turn}
			if s.TurnStart && len(s.Sent) > 0 {
				t.Message = s.Sent[0]
			}
			out = append(out, t)
		}
		t := &out[len(out)-1]
		t.Steps = append(t.Steps, s)
	}
	return out
}

// Steering returns the user messages sent while the run went on that
// joined at s: its Sent but for the turn's message.
func (s *Step) Steering() []string {
	if s.TurnStart && len(s.Sent) > 0 {
		return s.Sent[1:]
	}
	return s.Sent
}

// Commit is one rewrite of the transcript, in messages.
type Commit struct {
	Before int `json:"before"`
	After  int `json:"after"`
}

// Agent is a sub-agent a tool call ran.
type Agent struct {
	Name   string  `json:"name"`
	CallID string  `json:"call_id"`
	Steps  []*Step `json:"steps"`
	Error  string  `json:"error,omitempty"`
}

func newRun(title, source string) *Run {
	return &Run{Title: title, Source: source, index: map[uint64][]int{}, seed: maphash.MakeSeed()}
}

// add returns the pool index of m, adding it if it is new.
func (r *Run) add(m Message) int {
	var h maphash.Hash
	h.SetSeed(r.seed)
	h.WriteString(m.Role)
	h.WriteByte(0)
	h.WriteString(m.Content)
	h.WriteByte(0)
	h.WriteString(m.CallID)
	h.WriteByte(0)
	h.WriteString(m.Name)
	h.WriteByte(0)
	h.WriteString(m.Reasoning)
	for _, c := range m.Calls {
		h.WriteByte(1)
		h.WriteString(c.ID)
		h.WriteString(c.Name)
		h.WriteString(c.Args)
	}
	if m.IsError {
		h.WriteByte(2)
	}
	for _, k := range slices.Sorted(maps.Keys(m.Meta)) {
		h.WriteString(k + "=" + m.Meta[k])
	}
	sum := h.Sum64()
	for _, i := range r.index[sum] {
		if sameMessage(r.Messages[i], m) {
			return i
		}
	}
	r.Messages = append(r.Messages, m)
	i := len(r.Messages) - 1
	r.index[sum] = append(r.index[sum], i)
	return i
}

func sameMessage(a, b Message) bool {
	return a.Role == b.Role && a.Content == b.Content && a.Reasoning == b.Reasoning && a.CallID == b.CallID &&
		a.Name == b.Name && a.IsError == b.IsError && slices.Equal(a.Calls, b.Calls) && maps.Equal(a.Meta, b.Meta)
}

// fromDefs converts a transcript message.
func fromDefs(m defs.Message) Message {
	out := Message{Role: string(m.Role), Content: m.Content, Reasoning: m.Reasoning, CallID: m.ToolCallID, Name: m.Name, IsError: m.IsError, Meta: m.Meta}
	for _, c := range m.ToolCalls {
		out.Calls = append(out.Calls, Call{ID: c.ID, Name: c.Name, Args: string(c.Arguments)})
	}
	return out
}

// finish computes what every source derives the same way: the diff of
// each request against the previous one, the tools withdrawn and offered,
// the state changes, compactions. Sub-agents' steps are finished as runs
// of their own.
func (r *Run) finish() {
	r.finishSteps(r.Steps)
	r.finishTurns()
}

// finishTurns sets each step's turn and marks the first step of each. A
// golden file writes the turn only on a step that user messages joined,
// and the record that completes a paused step has no Sent: a step
// without Sent is in the turn of the step before it unless its record
// says a later one. The message of a turn whose first step does not hold
// it is the last user message of that step's request.
func (r *Run) finishTurns() {
	if !r.Conversation() {
		return
	}
	for i, s := range r.Steps {
		if i == 0 {
			s.TurnStart = true
		} else {
			prev := r.Steps[i-1]
			if len(s.Sent) == 0 && s.Turn < prev.Turn {
				s.Turn = prev.Turn
			}
			s.TurnStart = s.Turn != prev.Turn
		}
		if !s.TurnStart || len(s.Sent) > 0 {
			continue
		}
		for j := len(s.Request) - 1; j >= 0; j-- {
			if m := r.Messages[s.Request[j]]; m.Role == string(defs.RoleUser) {
				s.Sent = []string{m.Content}
				break
			}
		}
	}
}

func (r *Run) finishSteps(steps []*Step) {
	var prev, prevReq *Step // prevReq: the last step that sent a request
	var prevTools []string  // the tools of the last step that records them
	for _, s := range steps {
		if prev != nil {
			if s.Request != nil && prevReq != nil {
				s.Diff = r.diff(prevReq.Request, s.Request)
			}
			if s.Tools != nil && prevTools != nil {
				s.ToolsOn = minus(s.Tools, prevTools)
				s.ToolsOff = minus(prevTools, s.Tools)
			}
			if s.systemID != "" && prev.systemID != "" && s.systemID != prev.systemID {
				s.SystemChanged = true
			}
			if s.State != nil && prev.State != nil && s.Changes == nil {
				s.Changes = stateChanges(prev.State, s.State)
			}
		} else {
			s.Diff = Diff{Added: slices.Clone(s.Request)}
			if s.State != nil && s.Changes == nil {
				s.Changes = stateChanges(nil, s.State)
			}
		}
		for _, c := range s.Commits {
			if c.After < c.Before {
				s.Compaction = true
			}
		}
		for _, a := range s.Agents {
			r.finishSteps(a.Steps)
		}
		prev = s
		if s.Request != nil {
			prevReq = s
		}
		if s.Tools != nil {
			prevTools = s.Tools
		}
	}
}

// diff compares two requests by their pool indices: the shared prefix,
// then messages added and removed, and among them pairs of the same role
// answering the same call taken as rewritten.
func (r *Run) diff(prev, cur []int) Diff {
	d := Diff{}
	if len(prev) > 0 && len(prev) <= len(cur) && &prev[0] == &cur[0] {
		d.Shared = len(prev) // one array, extended: a store's session, read
	}
	for d.Shared < len(prev) && d.Shared < len(cur) && prev[d.Shared] == cur[d.Shared] {
		d.Shared++
	}
	inPrev := make(map[int]bool, len(prev)-d.Shared)
	for _, i := range prev[d.Shared:] {
		inPrev[i] = true
	}
	inCur := make(map[int]bool, len(cur)-d.Shared)
	for _, i := range cur[d.Shared:] {
		inCur[i] = true
	}
	var removed, added []int
	for _, i := range prev[d.Shared:] {
		if !inCur[i] {
			removed = append(removed, i)
		}
	}
	for _, i := range cur[d.Shared:] {
		if !inPrev[i] {
			added = append(added, i)
		}
	}
	// Pair removed and added messages in order: same role and, for tool
	// results, the same call.
	used := make([]bool, len(added))
	for _, ri := range removed {
		rm := r.Messages[ri]
		paired := false
		for k, ai := range added {
			am := r.Messages[ai]
			if used[k] || am.Role != rm.Role || am.CallID != rm.CallID || (rm.Role == "assistant" && !sameCalls(am.Calls, rm.Calls)) {
				continue
			}
			used[k], paired = true, true
			d.Rewritten = append(d.Rewritten, [2]int{ri, ai})
			break
		}
		if !paired {
			d.Removed = append(d.Removed, ri)
		}
	}
	for k, ai := range added {
		if !used[k] {
			d.Added = append(d.Added, ai)
		}
	}
	return d
}

func sameCalls(a, b []Call) bool {
	return slices.EqualFunc(a, b, func(x, y Call) bool { return x.ID == y.ID })
}

// minus returns the elements of a not in b.
func minus(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}

// stateChanges compares two states key by key.
func stateChanges(before, after map[string]string) []Change {
	var out []Change
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if b, ok := before[k]; !ok || b != after[k] {
			out = append(out, Change{Key: k, Before: b, After: after[k]})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(before)) {
		if _, ok := after[k]; !ok {
			out = append(out, Change{Key: k, Before: before[k]})
		}
	}
	return out
}

// stateOf splits a state's JSON object into its keys' values.
func stateOf(data json.RawMessage) (map[string]string, error) {
	out := map[string]string{}
	if len(data) == 0 {
		return out, nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	for k, v := range raw {
		out[k] = compactJSON(v)
	}
	return out, nil
}

func compactJSON(v []byte) string {
	if !bytes.ContainsAny(v, " \t\r\n") {
		return string(v) // compact already: no whitespace, even in strings
	}
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		return string(v)
	}
	return b.String()
}
