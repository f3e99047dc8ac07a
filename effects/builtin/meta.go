package builtin

import "github.com/reprompt/reprompt/effects/builtin/internal/transcript"

// Meta keys the built-in effects write on the messages they rewrite. Meta is
// never sent to a model.
const (
	// MetaTrimmed marks a tool result that was trimmed; its value is the
	// length of the original content in bytes. A message carrying it is
	// never trimmed again.
	MetaTrimmed = transcript.MetaTrimmed
	// MetaSummary marks the summary message written by Compact; its value is
	// the number of compactions folded into it ("1", "2", …).
	MetaSummary = transcript.MetaSummary
	// MetaSummaryText holds the summary text alone (without the labels and
	// file lists of Content), which the next compaction updates.
	MetaSummaryText = transcript.MetaSummaryText
	// MetaReadFiles and MetaModifiedFiles hold the files the summarised part
	// of the conversation read and modified, one per line, sorted.
	MetaReadFiles     = transcript.MetaReadFiles
	MetaModifiedFiles = transcript.MetaModifiedFiles
	// MetaSplitTurn is "true" on a summary whose cut fell inside a turn.
	MetaSplitTurn = transcript.MetaSplitTurn
	// MetaFailures holds the consecutive summarisation failures of Compact
	// when the summary was written, so a resumed run keeps its circuit
	// breaker.
	MetaFailures = transcript.MetaFailures
)
