package session

import "github.com/reprompt/reprompt/internal/steprec"

// RecordVersion is the version of the StepRecord format this package
// writes. A record carries its own version beside the checkpoint's: a
// reader that finds a later one may still show what it knows of it.
const RecordVersion = steprec.Version

// StepRecord is what happened at one step, beyond what a run needs to
// continue: which effects ran and why, what the request left out or
// reminded, its tokens, the tool calls and how long they took, the
// rewrites of the transcript. The runtime sets it on the checkpoint it
// saves at the end of a step (Checkpoint.Record), for tools that show a
// run after the fact (cmd/reprompt); resuming never reads it.
//
// It is the one record of a step of the module (golden step files of
// package snapshots hold the same record, with the request, reply, results
// and state that a checkpoint holds apart): its fields are documented in
// its definition. Every field is optional: a record only grows new fields,
// and a checkpoint saved before records existed has none (its steps are
// shown from what the transcripts, state and stats tell).
type StepRecord = steprec.Step

// Usage is the token usage a provider reported for one request.
type Usage = steprec.Usage

// CallRecord is one tool call of a step: its id and name, how long it ran
// (DurationNS) and the Go error behind an error result (Error).
type CallRecord = steprec.Call

// CommitRecord is one rewrite of the transcript: its length in messages
// before and after (both 0 when unknown: the steps of a sub-agent). A
// rewrite to fewer messages is a compaction.
type CommitRecord = steprec.Commit

// AgentRecord is a sub-agent that a tool call ran: the call's id, the
// sub-agent's name, the records of its steps and the error its run ended
// with.
type AgentRecord = steprec.Agent
