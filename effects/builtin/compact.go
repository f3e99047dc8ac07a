package builtin

import (
	"time"

	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/effects/builtin/internal/compaction"
	"github.com/reprompt/reprompt/state"
)

// Strategy is how Compact shortens the older part of a conversation once
// trimming was not enough.
type Strategy string

// Strategies of Compact.
const (
	// StrategySummarize asks the model (CompactConfig.Model or Step.Model)
	// for a summary of the older messages. It is the default.
	StrategySummarize Strategy = "summarize"
	// StrategyTruncate drops the oldest messages (a previous summary, if
	// any, is kept as it is). No model call.
	StrategyTruncate Strategy = "truncate"
	// StrategyWindow keeps the last CompactConfig.WindowMessages messages
	// (fewer if they do not fit) and replaces the older ones by a rule-based
	// summary. No model call.
	StrategyWindow Strategy = "window"
	// StrategyHeuristic cuts like StrategySummarize (by tokens) and writes a
	// rule-based summary: the last user requests, the last assistant notes,
	// the tools used, the files read and modified. No model call.
	StrategyHeuristic Strategy = "heuristic"
	// StrategyTrim is reported in Info when trimming old tool results was
	// enough and nothing was summarised. It is not a valid configuration.
	StrategyTrim Strategy = "trim"
)

func (s Strategy) valid() bool {
	switch s {
	case "", StrategySummarize, StrategyTruncate, StrategyWindow, StrategyHeuristic:
		return true
	}
	return false
}

// Defaults of CompactConfig.
const (
	DefaultThreshold      = 0.8
	DefaultTrimRecent     = 6
	DefaultWindowMessages = 10
	DefaultMaxFailures    = 3
	// DefaultStateKey is where Compact keeps its circuit breaker in
	// CompactConfig.State.
	DefaultStateKey = "builtin.compact.failures"
)

// DefaultSummaryPrompt is the system prompt of the summarising call.
const DefaultSummaryPrompt = `You summarise the earlier part of a conversation between a user and an AI agent that uses tools. ` +
	`The agent will continue the task with only your summary and the most recent messages, so keep everything it needs: ` +
	`the user's goal and constraints, what was done and found, decisions and their reasons, exact names (files, functions, ` +
	`commands, identifiers, values), errors met and how they were resolved, and what remains to do. ` +
	`Write plain text with the sections "Goal", "Progress", "Key facts", "Next steps", and "Current turn" when the ` +
	`conversation says a turn is in progress. Do not address the user; do not invent anything.`

// FileTracking says which tool calls read or modify files, for the file
// lists kept in a summary. A nil field means its default.
type FileTracking struct {
	// ReadTools name the tools that read a file. Default: read_file, read,
	// view, view_file, cat, open_file.
	ReadTools []string
	// ModifyTools name the tools that modify a file. Default: write_file,
	// write, edit_file, edit, create_file, str_replace, apply_patch,
	// delete_file.
	ModifyTools []string
	// ArgKeys are the argument keys that hold the path, tried in order; a
	// string or an array of strings is accepted. Default: path, file_path,
	// file, filename, paths.
	ArgKeys []string
}

func (f FileTracking) normalized() FileTracking {
	if f.ReadTools == nil {
		f.ReadTools = []string{"read_file", "read", "view", "view_file", "cat", "open_file"}
	}
	if f.ModifyTools == nil {
		f.ModifyTools = []string{"write_file", "write", "edit_file", "edit", "create_file", "str_replace", "apply_patch", "delete_file"}
	}
	if f.ArgKeys == nil {
		f.ArgKeys = []string{"path", "file_path", "file", "filename", "paths"}
	}
	return f
}

// CompactConfig configures Compact. The zero value means the defaults.
type CompactConfig struct {
	// Threshold is the fraction of the usable window (Window − Reserve) above
	// which Compact acts. Zero means DefaultThreshold (0.8).
	Threshold float64
	// Target is the fraction of the usable window a compaction brings the
	// request under, below Threshold so that the next compaction is far
	// off: each one rewrites the transcript and breaks the cached prefix.
	// Trimming alone is enough only when it reaches Target; otherwise the
	// older messages are summarised. Zero means Threshold − 0.2 (at least
	// Threshold/2); a value above Threshold means Threshold.
	Target float64
	// Window and Reserve, when Window is non-zero, replace Step.Budget's.
	// Compact does nothing while no window is known.
	Window, Reserve int
	// KeepRecentTokens is the most tokens of recent messages kept verbatim
	// after a summary. Zero means a quarter of the usable window. Fewer are
	// kept when the summary and the rest would not fit under the threshold.
	KeepRecentTokens int
	// WindowMessages is how many recent messages StrategyWindow keeps. Zero
	// means DefaultWindowMessages.
	WindowMessages int
	// TrimRecent is how many of the last messages the first, light phase
	// (trimming old tool results) leaves alone. Zero means
	// DefaultTrimRecent.
	TrimRecent int
	// MaxResultLength is the length old tool results are trimmed to. Zero
	// means DefaultMaxResultLength.
	MaxResultLength int
	// Strategy is how the older messages are shortened. Empty means
	// StrategySummarize.
	Strategy Strategy
	// Fallback is the rule-based strategy used when summarising is not
	// possible: no model, a failed model call, or an open circuit breaker.
	// Empty means StrategyHeuristic.
	Fallback Strategy
	// Model writes summaries. nil means Step.Model; with neither, Fallback
	// is used.
	Model effects.Completer
	// SystemPrompt is the system prompt of the summarising call. Empty
	// means DefaultSummaryPrompt.
	SystemPrompt string
	// SummaryInputTokens bounds the conversation text sent to the
	// summariser: the oldest messages are left out (and said to be) beyond
	// it. Zero means half the usable window.
	SummaryInputTokens int
	// SummaryMaxTokens bounds the summary; a longer one is cut. Zero means a
	// tenth of the usable window.
	SummaryMaxTokens int
	// Continue sends the summarising call, when the model is the run's
	// (Step.Model is an effects.Continuer), as the run's own request: its
	// tools, system prompt and messages up to the cut, as cached (not
	// bounded by SummaryInputTokens), then the instructions, SystemPrompt
	// first. A request too long for the window is summarised as usual,
	// and so is one whose reply called a tool instead of summarising, or
	// that the provider refused (as too long, say): asked again on its own,
	// bounded, before Fallback.
	Continue bool
	// MaxFailures is how many summarising calls may fail in a row before
	// Compact stops calling the model for the rest of the run (the circuit
	// breaker opens) and uses Fallback only. Zero means DefaultMaxFailures.
	MaxFailures int
	// Files says which tool calls read and modify files.
	Files FileTracking
	// State, if set, keeps the count of consecutive failures under StateKey
	// so that a resumed session keeps its circuit breaker. The count is also
	// written on every summary message (Meta[MetaFailures]).
	State *state.Store
	// StateKey is the key in State. Empty means DefaultStateKey.
	StateKey string
	// OnCompaction, if set, is called after each compaction with what it
	// did. It is called from the effect, so it must not block for long.
	OnCompaction func(Info)
}

func (c CompactConfig) normalized() CompactConfig {
	if c.Threshold <= 0 {
		c.Threshold = DefaultThreshold
	}
	if c.Target <= 0 {
		c.Target = max(c.Threshold-0.2, c.Threshold/2)
	}
	c.Target = min(c.Target, c.Threshold)
	if c.WindowMessages <= 0 {
		c.WindowMessages = DefaultWindowMessages
	}
	if c.TrimRecent <= 0 {
		c.TrimRecent = DefaultTrimRecent
	}
	if c.MaxResultLength <= 0 {
		c.MaxResultLength = DefaultMaxResultLength
	}
	if c.Strategy == "" {
		c.Strategy = StrategySummarize
	}
	if c.Fallback == "" || c.Fallback == StrategySummarize {
		c.Fallback = StrategyHeuristic
	}
	if c.SystemPrompt == "" {
		c.SystemPrompt = DefaultSummaryPrompt
	}
	if c.MaxFailures <= 0 {
		c.MaxFailures = DefaultMaxFailures
	}
	if c.StateKey == "" {
		c.StateKey = DefaultStateKey
	}
	c.Files = c.Files.normalized()
	return c
}

// Info is what one compaction did.
type Info struct {
	// Step is the step number.
	Step int
	// Strategy is what shortened the conversation: StrategyTrim when
	// trimming old tool results was enough, otherwise the strategy used
	// (Fallback when summarising failed).
	Strategy Strategy
	// Forced reports a compaction made because the provider rejected the
	// request as too long (Step.ContextTooLong), whatever the threshold.
	Forced bool
	// TokensBefore and TokensAfter count the request's input: Budget.Fixed
	// plus the messages.
	TokensBefore, TokensAfter     int
	MessagesBefore, MessagesAfter int
	// Trimmed is the number of tool results trimmed.
	Trimmed int
	// Summarized is the number of messages replaced by the summary (or
	// dropped by StrategyTruncate); Kept the number kept verbatim after it.
	Summarized, Kept int
	// SplitTurn reports a cut inside a turn: the turn's beginning is in the
	// summary, its end kept verbatim.
	SplitTurn bool
	// Incremental reports that an earlier summary was updated.
	Incremental bool
	// SummaryLen is the summary's length in characters (runes).
	SummaryLen int
	// Duration is the wall time of the compaction, model call included.
	Duration time.Duration
	// Err is the summarising call's error when Fallback was used instead.
	Err error
	// Failures is the count of consecutive failed summarising calls after
	// this compaction; BreakerOpen reports that it reached MaxFailures.
	Failures    int
	BreakerOpen bool
}

// ErrBreakerOpen is Info.Err once the circuit breaker is open: the model is
// no longer asked for summaries.
var ErrBreakerOpen = compaction.ErrBreakerOpen

// Compact returns an effect (kind compact, to register in the BeforeCall
// phase) that keeps the request under Threshold of the usable window.
//
// When the request's tokens (Step.Budget.Fixed plus the messages) exceed
// Threshold × (Window − Reserve), or at once when Step.ContextTooLong is set,
// it compacts in two phases, aiming under Target × (Window − Reserve) so
// that the next compaction, and the next break of the cached prefix, is far
// off:
//
//  1. Trim the long results of tool calls older than the last TrimRecent
//     messages (error results are never cut). If that reaches Target, stop.
//  2. Cut the conversation in two: the older part is replaced by one summary
//     message, the recent part (at most KeepRecentTokens, and what fits
//     under Target beside the summary) is kept verbatim.
//
// The cut never separates an assistant message from the results of its tool
// calls (parallel calls included): it always falls before a user or an
// assistant message. A cut before an assistant message is inside a turn (a
// split turn): the summariser is told which messages begin the turn still in
// progress. The system prompt is not a message and is never touched.
//
// The summary is a user message whose Content is wrapped in
// <summary>…</summary> and whose Meta[MetaSummary] is set. It is placed right
// after the first message when that is the user's task (a user message
// small enough to keep, a quarter of the usable window at most), else at the
// start of the transcript. A later compaction updates that summary (the
// summariser gets the previous one to update) instead of adding a second.
// The summary lists the files read and modified by the summarised tool
// calls that did not fail (see FileTracking), accumulated across
// compactions; a file modified is not listed as read.
//
// The summariser's input is bounded by SummaryInputTokens: the oldest
// messages are left out beyond it. After MaxFailures failed summarising
// calls in a row the circuit breaker opens and Compact uses Fallback only;
// every failed call falls back too, so the request is shortened anyway. The
// failure count is kept on the summary message and in State, so a resumed
// run keeps it.
//
// Register Compact with effects.Recovery() (Config.Register does): when the
// provider rejects a request as too long, the runtime runs it again with
// Step.ContextTooLong set and sends the compacted request once more.
//
// The result is committed once (CommitMessages): the requests after it
// share a prefix again. Compact declares nothing of its next run
// (effects.Step.WillRewrite): whether it acts then depends on what the
// step adds, and when it acts it rewrites from the first result it trims
// or from where the summary goes (right after the task), which no
// breakpoint of the previous request could have kept. Register Compact before effects that change the
// step's messages by a view, since a commit drops the views made before it.
//
// Counting is incremental: on a step where nothing is compacted, Compact
// counts only the messages new since the last step (or asks Budget.Prefix,
// when the runtime offers it). Without Budget.Prefix, a commit by another
// effect that shrinks earlier messages (trimming) leaves the running count
// too high until it crosses the threshold, where Compact counts from scratch
// before acting; a commit that made earlier messages longer would go
// unnoticed until the next compaction. Build it once per run
// (see TrimToolResults). It is safe for concurrent use.
func Compact(cfg CompactConfig) effects.Func {
	c := cfg.normalized()
	ic := compaction.Config{
		Threshold: c.Threshold, Target: c.Target,
		Window: c.Window, Reserve: c.Reserve,
		KeepRecentTokens:   c.KeepRecentTokens,
		WindowMessages:     c.WindowMessages,
		TrimRecent:         c.TrimRecent,
		MaxResultLength:    c.MaxResultLength,
		Strategy:           compaction.Strategy(c.Strategy),
		Fallback:           compaction.Strategy(c.Fallback),
		Model:              c.Model,
		SystemPrompt:       c.SystemPrompt,
		SummaryInputTokens: c.SummaryInputTokens,
		SummaryMaxTokens:   c.SummaryMaxTokens, Continue: c.Continue,
		MaxFailures: c.MaxFailures,
		Files:       compaction.Files(c.Files),
		State:       c.State,
		StateKey:    c.StateKey,
	}
	if on := c.OnCompaction; on != nil {
		ic.OnCompaction = func(i compaction.Info) { on(infoOf(i)) }
	}
	return compaction.New(ic)
}

// infoOf is Info for what the engine reports.
func infoOf(i compaction.Info) Info {
	return Info{
		Step: i.Step, Strategy: Strategy(i.Strategy), Forced: i.Forced,
		TokensBefore: i.TokensBefore, TokensAfter: i.TokensAfter,
		MessagesBefore: i.MessagesBefore, MessagesAfter: i.MessagesAfter,
		Trimmed: i.Trimmed, Summarized: i.Summarized, Kept: i.Kept,
		SplitTurn: i.SplitTurn, Incremental: i.Incremental, SummaryLen: i.SummaryLen,
		Duration: i.Duration, Err: i.Err, Failures: i.Failures, BreakerOpen: i.BreakerOpen,
	}
}

// SummaryContent returns the content of a summary message: text and the file
// lists, labelled and wrapped in <summary>…</summary>. Compact writes it; it
// is exported so that tests and tools can recognise it.
//
//	<summary>
//	This summary replaces the earlier part of the conversation; the messages after it continue from where it ends.
//
//	TEXT
//
//	<read-files>
//	a.go
//	</read-files>
//	<modified-files>
//	b.go
//	</modified-files>
//	</summary>
//
// An empty list is left out.
func SummaryContent(text string, read, modified []string) string {
	return compaction.SummaryContent(text, read, modified)
}
