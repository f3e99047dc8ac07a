package session

import "github.com/reprompt/reprompt/effects"

// RecordVersion is the version of the StepRecord format this package
// writes. A record carries its own version beside the checkpoint's: a
// reader that finds a later one may still show what it knows of it.
const RecordVersion = 1

// StepRecord is what happened at one step, beyond what a run needs to
// continue: which effects ran and why, what the request left out or
// reminded, its tokens, the tool calls and how long they took, the
// rewrites of the transcript. The runtime sets it on the checkpoint it
// saves at the end of a step (Checkpoint.Record), for tools that show a
// run after the fact (cmd/reprompt); resuming never reads it.
//
// Every field is optional: a record only grows new fields, and a
// checkpoint saved before records existed has none (its steps are shown
// from what the transcripts, state and stats tell).
type StepRecord struct {
	// Version is the format version of the record (RecordVersion when
	// written by this package).
	Version int `json:"v"`
	// Step is the number of the step the record describes.
	Step int `json:"step"`
	// Effects are the effects that ran, both phases, and why.
	Effects []effects.Ran `json:"effects,omitempty"`
	// Disabled and Reminded name the definitions disabled and reminded for
	// the step's request, as "kind:name".
	Disabled []string `json:"disabled,omitempty"`
	Reminded []string `json:"reminded,omitempty"`
	// Tools names the tools the request offered, in order.
	Tools []string `json:"tools,omitempty"`
	// System identifies the request's system prompt (a hash of its text):
	// two steps with the same System sent the same system prompt.
	System string `json:"system,omitempty"`
	// InputTokens is the runtime's count of the request's tokens,
	// PrefixTokens how many of them it shares as an exact prefix with the
	// previous request (what a prompt cache can reuse), and BilledInput
	// the input billed at full price (see runtime.Step).
	InputTokens  int     `json:"input_tokens,omitempty"`
	PrefixTokens int     `json:"prefix_tokens,omitempty"`
	BilledInput  float64 `json:"billed_input,omitempty"`
	// Usage is what the provider reported for the step's model call.
	Usage Usage `json:"usage,omitzero"`
	// Finish is the reply's finish reason.
	Finish string `json:"finish,omitempty"`
	// Calls are the reply's tool calls, in call order.
	Calls []CallRecord `json:"calls,omitempty"`
	// Commits are the rewrites of the transcript at this step (trimming,
	// compaction), in order.
	Commits []CommitRecord `json:"commits,omitempty"`
	// Recovered reports a request the provider rejected as too long and
	// that was sent again after compaction.
	Recovered bool `json:"recovered,omitempty"`
	// Summaries counts the completions effects asked for (compaction's
	// summaries).
	Summaries int `json:"summaries,omitempty"`
	// Agents are the sub-agents the tool calls ran, in call order.
	Agents []AgentRecord `json:"agents,omitempty"`
	// Reply is the text of the reply. Set only in the records of a
	// sub-agent's steps, whose transcript no checkpoint holds.
	Reply string `json:"reply,omitempty"`
	// DurationNS is the step's wall time, in nanoseconds.
	DurationNS int64 `json:"duration_ns,omitempty"`
	// Resumed reports a step completed by a resume after a crash;
	// Interrupted names its calls that got an "interrupted" result.
	Resumed     bool     `json:"resumed,omitempty"`
	Interrupted []string `json:"interrupted,omitempty"`
}

// Usage is the token usage a provider reported for one request.
type Usage struct {
	InputTokens  int `json:"input,omitempty"`
	OutputTokens int `json:"output,omitempty"`
	CachedTokens int `json:"cached,omitempty"`
}

// CallRecord is one tool call of a step.
type CallRecord struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// DurationNS is how long the call ran, in nanoseconds; 0 for a call
	// that did not run (refused, or completed before a crash).
	DurationNS int64 `json:"duration_ns,omitempty"`
	// Error is the Go error behind an error result of a tool that failed
	// when it ran (runtime.Step.ToolErrors); empty otherwise.
	Error string `json:"error,omitempty"`
}

// CommitRecord is one rewrite of the transcript: its length in messages
// before and after (both 0 when unknown: the steps of a sub-agent). A
// rewrite to fewer messages is a compaction.
type CommitRecord struct {
	Before int `json:"before"`
	After  int `json:"after"`
}

// AgentRecord is a sub-agent that a tool call ran.
type AgentRecord struct {
	CallID string `json:"call_id"`
	Name   string `json:"name"`
	// Steps are the records of the sub-agent's steps.
	Steps []StepRecord `json:"steps,omitempty"`
	// Error is the error its run ended with; empty if it completed.
	Error string `json:"error,omitempty"`
}
