// Package steprec owns the record of one step of a run, and its golden
// text: the one type that the runtime fills (runtime.Step.Record), a
// checkpoint keeps (session.StepRecord is an alias of Step), a golden step
// file shows (package snapshots) and the step viewer reads
// (cmd/reprompt), with the one codec of that text, Write and Parse.
//
// # Two uses, one type
//
// A checkpoint holds its transcript and state itself: the record the
// runtime saves with it has the measured fields (tokens, usage, durations,
// commits) and leaves the shown ones (Request, Response, Results, State,
// ...) empty. A golden file holds no measure (it must not change from run
// to run) and shows the request, reply, results and state: Parse returns
// records with the shown fields set and the measured ones zero.
//
// # Adding a field
//
// A new field of Step is added here, with its JSON name (a checkpoint
// keeps it, and the step viewer's page reads it from the step's "record"),
// and, if a golden file is to show it, in Write and Parse, with a case in
// the round-trip test. The runtime sets it in runtime.Step.Record.
package steprec

import (
	"encoding/json"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
)

// Version is the version of the Step format this package writes. A record
// carries its own version beside the checkpoint's: a reader that finds a
// later one may still show what it knows of it.
const Version = 1

// Step is what happened at one step, beyond what a run needs to continue:
// which effects ran and why, what the request left out or reminded, its
// tokens, the tool calls and how long they took, the rewrites of the
// transcript, and, in a golden file, the request, the reply, the results
// and the state.
//
// Every field is optional: a record only grows new fields, and a
// checkpoint saved before records existed has none (its steps are shown
// from what the transcripts, state and stats tell).
type Step struct {
	// Version is the format version of the record (Version when written
	// by the runtime).
	Version int `json:"v"`
	// Step is the number of the step the record describes.
	Step int `json:"step"`
	// Turn is the conversation's turn the step belongs to, from 0; Sent
	// are the user messages that joined the transcript at its start (the
	// turn's message, or messages sent while the run went on).
	Turn int      `json:"turn,omitempty"`
	Sent []string `json:"sent,omitempty"`
	// Effects are the effects that ran, both phases, and why. In a golden
	// file, Site is the file without its line.
	Effects []effects.Ran `json:"effects,omitempty"`
	// Disabled and Reminded name the definitions disabled and reminded for
	// the step's request, as "kind:name".
	Disabled []string `json:"disabled,omitempty"`
	Reminded []string `json:"reminded,omitempty"`
	// Tools names the tools the request offered, in order.
	Tools []string `json:"tools,omitempty"`
	// System identifies the request's system prompt (a hash of its text):
	// two steps with the same System sent the same system prompt. Empty in
	// a golden file, which shows the text (Request.System).
	System string `json:"system,omitempty"`
	// InputTokens is the runtime's count of the request's tokens,
	// PrefixTokens how many of them it shares as an exact prefix with the
	// previous request (what a prompt cache can reuse), and BilledInput
	// the input billed at full price (see runtime.Step).
	InputTokens  int     `json:"input_tokens,omitempty"`
	PrefixTokens int     `json:"prefix_tokens,omitempty"`
	BilledInput  float64 `json:"billed_input,omitempty"`
	// Cache says, in one line, why the request's prefix broke before the
	// end of the previous request's, so that a prompt cache could reuse
	// only PrefixTokens of it: the definition declared, changed or
	// removed, the effect that disabled or reminded something, the commit
	// that rewrote the transcript, the tool list that changed. Empty when
	// the request extends the previous one (or there is none).
	Cache string `json:"cache,omitempty"`
	// Usage is what the provider reported for the step's model call.
	Usage Usage `json:"usage,omitzero"`
	// Finish is the reply's finish reason.
	Finish string `json:"finish,omitempty"`
	// Calls are the reply's tool calls, in call order.
	Calls []Call `json:"calls,omitempty"`
	// Commits are the rewrites of the transcript at this step (trimming,
	// compaction), in order.
	Commits []Commit `json:"commits,omitempty"`
	// Recovered reports a request the provider rejected as too long and
	// that was sent again after compaction.
	Recovered bool `json:"recovered,omitempty"`
	// Summaries counts the completions effects asked for (compaction's
	// summaries); SummaryCalls, in a golden record, shows them.
	Summaries int `json:"summaries,omitempty"`
	// Agents are the sub-agents the tool calls ran, in call order.
	Agents []Agent `json:"agents,omitempty"`
	// Reply is the text of the reply. Set only in the records of a
	// sub-agent's steps in a checkpoint, whose transcript no checkpoint
	// holds.
	Reply string `json:"reply,omitempty"`
	// DurationNS is the step's wall time, in nanoseconds.
	DurationNS int64 `json:"duration_ns,omitempty"`
	// Resumed reports a step completed by a resume after a crash;
	// Interrupted names its calls that got an "interrupted" result.
	Resumed     bool     `json:"resumed,omitempty"`
	Interrupted []string `json:"interrupted,omitempty"`
	// Paused is, in a checkpoint, the record of the step as it paused for
	// approvals or answers (with Awaiting and State set), on the pending
	// checkpoints of the step and on the record that completes it, whose
	// own fields say what the completion did; a step that paused twice
	// holds the first pause in its Paused. A golden file has a record per
	// pause instead.
	Paused *Step `json:"paused,omitempty"`

	// The fields below are what a golden file shows; the runtime leaves
	// them empty in the record of a checkpoint, which holds the transcript
	// and the state itself, but for Answer and Decisions, which it sets
	// there too, and Awaiting and State, which it sets on a Paused record.

	// Committed reports that an effect rewrote the transcript at this step.
	Committed bool `json:"committed,omitempty"`
	// Request is what was sent; nil for a step that sent none (completed
	// after a pause or a crash).
	Request *Request `json:"request,omitempty"`
	// Response is the model's reply; nil if none, and on the record that
	// completes a paused step (its reply is the paused record's).
	Response *Response `json:"response,omitempty"`
	// Results are the results of the reply's tool calls, in call order.
	Results []Result `json:"results,omitempty"`
	// SummaryCalls are the summary completions, in order.
	SummaryCalls []Summary `json:"summary_calls,omitempty"`
	// Answer is the typed answer accepted at this step, as one line of
	// JSON; "" for every other step.
	Answer string `json:"answer,omitempty"`
	// Awaiting are the calls that wait for a person's decision: the step
	// paused.
	Awaiting []Awaiting `json:"awaiting,omitempty"`
	// Decisions are, on the record that completes a paused step, the
	// decisions on its calls (a golden file names that step "step N
	// decided").
	Decisions []Decision `json:"decisions,omitempty"`
	// State is the state after the step, by key, each value as compact
	// JSON; nil when not recorded, empty for an empty state.
	State map[string]string `json:"state,omitempty"`
}

// Usage is the token usage a provider reported for one request, as
// llm.Usage counts it: InputTokens are all the input, CachedTokens the part
// read from the provider's prompt cache, CacheWriteTokens the part written
// to it (CacheWrite1hTokens of them to entries that live an hour); the
// rest of the input was neither (see Uncached).
type Usage struct {
	InputTokens        int `json:"input,omitempty"`
	OutputTokens       int `json:"output,omitempty"`
	CachedTokens       int `json:"cached,omitempty"`
	CacheWriteTokens   int `json:"cache_write,omitempty"`
	CacheWrite1hTokens int `json:"cache_write_1h,omitempty"`
}

// Uncached returns the input tokens neither read from the cache nor
// written to it (never below zero).
func (u Usage) Uncached() int {
	return max(u.InputTokens-max(u.CachedTokens, 0)-max(u.CacheWriteTokens, 0), 0)
}

// Call is one tool call of a step.
type Call struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// DurationNS is how long the call ran, in nanoseconds; 0 for a call
	// that did not run (refused, or completed before a crash).
	DurationNS int64 `json:"duration_ns,omitempty"`
	// Error is the Go error behind an error result of a tool that failed
	// when it ran (runtime.Step.ToolErrors); empty otherwise.
	Error string `json:"error,omitempty"`
}

// Commit is one rewrite of the transcript: its length in messages before
// and after (both 0 when unknown: the steps of a sub-agent). A rewrite to
// fewer messages is a compaction.
type Commit struct {
	Before int `json:"before"`
	After  int `json:"after"`
}

// Agent is a sub-agent that a tool call ran.
type Agent struct {
	CallID string `json:"call_id"`
	Name   string `json:"name"`
	// Steps are the records of the sub-agent's steps.
	Steps []Step `json:"steps,omitempty"`
	// Error is the error its run ended with; empty if it completed.
	Error string `json:"error,omitempty"`
}

// Request is what a step sent.
type Request struct {
	// System is the system prompt; empty for none.
	System string `json:"system,omitempty"`
	// Tools are the tools offered, in order.
	Tools []Tool `json:"tools,omitempty"`
	// Output is the typed answer asked for; nil for none.
	Output *Output `json:"output,omitempty"`
	// Messages are the messages sent. The caller owns them: Write only
	// reads them.
	Messages []defs.Message `json:"messages,omitempty"`
}

// Tool is a tool as the request offered it.
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Schema is the parameters' JSON Schema, as JSON.
	Schema string `json:"schema,omitempty"`
}

// Output is the typed answer a request asks for.
type Output struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Mode        string `json:"mode"`
	Description string `json:"description,omitempty"`
	// Schema is the answer's JSON Schema; a golden file does not show it
	// when Mode is "tool" (the answer tool, listed with the tools, has it).
	Schema string `json:"schema,omitempty"`
}

// Response is a model's reply.
type Response struct {
	// Refusal is the model's refusal, when it refused.
	Refusal string `json:"refusal,omitempty"`
	// Message is the assistant message.
	Message defs.Message `json:"message"`
}

// Result is the result of a tool call.
type Result struct {
	CallID string `json:"call_id"`
	Name   string `json:"name"`
	// Arguments are the call's arguments, as one line of JSON (or quoted
	// text when they were not JSON).
	Arguments string `json:"arguments"`
	Content   string `json:"content"`
	IsError   bool   `json:"is_error,omitempty"`
}

// Summary is a completion an effect asked for.
type Summary struct {
	// System and Messages are its request (messages with their role and
	// content only).
	System   string         `json:"system,omitempty"`
	Messages []defs.Message `json:"messages,omitempty"`
	// Error is the error of a failed call.
	Error string `json:"error,omitempty"`
	// Text is the summary the model gave; "" for a failed call.
	Text string `json:"text,omitempty"`
	// Answered reports that the model answered (Text may be empty).
	Answered bool `json:"answered,omitempty"`
}

// Awaiting is a call that waits for a person's decision.
type Awaiting struct {
	CallID string `json:"call_id"`
	Tool   string `json:"tool"`
	// Arguments are the call's arguments, as one line of JSON.
	Arguments string `json:"arguments"`
	// Question is the question the call asked (prompt.Ask), in the record
	// of a checkpoint; "" for an approval, and in a golden file.
	Question string `json:"question,omitempty"`
}

// Decision is the decision on a call that needed approval.
type Decision struct {
	CallID   string `json:"call_id"`
	Tool     string `json:"tool"`
	Approved bool   `json:"approved,omitempty"`
	// Reason is, for a denied call, what the model got as its result.
	Reason string `json:"reason,omitempty"`
	// Asked are, for a call that asked the user (prompt.Ask), its
	// questions and their answers, in order; the call was approved once
	// they were answered.
	Asked []Asked `json:"asked,omitempty"`
}

// Asked is a question a call asked the user, and the answer (JSON).
type Asked struct {
	Question string          `json:"question"`
	Answer   json.RawMessage `json:"answer,omitempty"`
}
