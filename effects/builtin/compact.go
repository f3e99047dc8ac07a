package builtin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
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
var ErrBreakerOpen = errors.New("compaction: summarising failed too often; using the fallback strategy")

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
// share a prefix again. Register Compact before effects that change the
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
	c := &compactor{cfg: cfg.normalized()}
	return c.run
}

type compactor struct {
	cfg      CompactConfig
	mu       sync.Mutex
	cur      cursor
	tokens   int // tokens of the transcript up to cur.n, without Fixed
	failures int
	loaded   bool
}

func (c *compactor) usable(s *effects.Step) int {
	window, reserve := s.Budget.Window, s.Budget.Reserve
	if c.cfg.Window > 0 {
		window, reserve = c.cfg.Window, c.cfg.Reserve
	}
	if window <= 0 {
		return 0
	}
	if u := window - reserve; u > 0 {
		return u
	}
	return window / 2
}

func (c *compactor) run(ctx context.Context, s *effects.Step) error {
	usable := c.usable(s)
	if usable == 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	msgs := s.Transcript()
	if !c.loaded {
		c.load(ctx, msgs)
	}
	var total int
	if s.Budget.Prefix != nil {
		total = s.Tokens() // the runtime counts prefixes in constant time
	} else {
		if !c.cur.valid(msgs) {
			c.cur.reset()
			c.tokens = 0
		}
		if c.cur.n < len(msgs) {
			c.tokens += s.Budget.Tokens(msgs[c.cur.n:])
			c.cur.set(msgs)
		}
		total = s.Budget.Fixed + c.tokens
		if view := s.Messages(); len(view) > len(msgs) {
			total += s.Budget.Tokens(view[len(msgs):])
		} else if len(view) < len(msgs) {
			total = s.Tokens()
		}
	}
	limit := int(c.cfg.Threshold * float64(usable))
	if total > limit && s.Budget.Prefix == nil {
		// The running count may be stale: another effect's commit may have
		// shrunk messages the cursor does not sample (trimming does). Count
		// from scratch before acting, and start again from there.
		c.tokens = s.Budget.Tokens(msgs)
		c.cur.set(msgs)
		total = s.Tokens()
	}
	if total <= limit && !s.ContextTooLong {
		return nil
	}
	return c.compact(ctx, s, msgs, total, usable)
}

// load reads the failure count a resumed run left.
func (c *compactor) load(ctx context.Context, msgs []defs.Message) {
	c.loaded = true
	if c.cfg.State != nil {
		if n, err := state.Get[int](ctx, c.cfg.State, c.cfg.StateKey); err == nil {
			c.failures = max(c.failures, n)
		}
	}
	if i := summaryIndex(msgs); i >= 0 {
		if n, err := strconv.Atoi(msgs[i].Meta[MetaFailures]); err == nil {
			c.failures = max(c.failures, n)
		}
	}
}

func (c *compactor) setFailures(ctx context.Context, n int) error {
	c.failures = n
	if c.cfg.State != nil {
		return state.Set(ctx, c.cfg.State, c.cfg.StateKey, n)
	}
	return nil
}

// summaryIndex returns the index of the summary message (at 0 or 1), or -1.
func summaryIndex(msgs []defs.Message) int {
	for i := 0; i < len(msgs) && i <= maxHead; i++ {
		if msgs[i].Meta[MetaSummary] != "" {
			return i
		}
		if msgs[i].Role != defs.RoleUser && msgs[i].Role != defs.RoleSystem {
			break // the summary sits right after the declared task
		}
	}
	return -1
}

// maxHead bounds how many leading messages are kept verbatim as the task.
const maxHead = 8

// headLen returns how many leading messages are the task as declared: the
// system messages the prompt declared first, then the first user message,
// at most maxHead messages and no more than budget tokens (a summary is
// never part of it).
func headLen(msgs []defs.Message, tokens func([]defs.Message) int, budget int) int {
	n := 0
	for n < len(msgs) && n < maxHead-1 && msgs[n].Role == defs.RoleSystem && msgs[n].Meta[MetaSummary] == "" {
		n++
	}
	if n < len(msgs) && msgs[n].Role == defs.RoleUser && msgs[n].Meta[MetaSummary] == "" {
		n++
	}
	for n > 0 && tokens(msgs[:n]) > budget {
		n--
	}
	return n
}

// compact shortens the transcript in named steps, each taken only when the
// ones before it did not shorten it enough:
//
//  1. trimOldResults trims the tool results older than the TrimRecent
//     newest messages;
//  2. plan chooses the older messages a summary replaces (when there are
//     none, trimKept trims the remaining tool results instead);
//  3. summarize writes their summary with the model, or falls back;
//  4. assemble builds the new transcript: head, summary, kept messages.
//
// finish commits the result and reports it to OnCompaction.
func (c *compactor) compact(ctx context.Context, s *effects.Step, msgs []defs.Message, total, usable int) error {
	k := &compaction{s: s, cfg: &c.cfg, out: msgs, total: total, usable: usable, start: time.Now(),
		target: int(c.cfg.Target * float64(usable)),
		info:   Info{Step: s.Number, Forced: s.ContextTooLong, TokensBefore: total, MessagesBefore: len(msgs)}}
	if k.trimOldResults() {
		return c.finish(k, k.out)
	}
	if !k.plan() {
		if !k.trimKept() {
			return nil
		}
		return c.finish(k, k.out)
	}
	strategy, text, err := c.summarize(ctx, k)
	if err != nil {
		return err
	}
	return c.finish(k, c.assemble(k, strategy, text))
}

// A compaction is one run of compact: the transcript it starts from and
// what each of its steps found.
type compaction struct {
	s      *effects.Step
	cfg    *CompactConfig
	info   Info
	start  time.Time
	usable int // the window less the reserve, in tokens
	target int // the share of usable compaction aims at (Target)
	// out is the transcript being shortened: the step's transcript itself
	// (read-only) until a step copies it. total is its tokens, with the
	// fixed part of the request.
	out   []defs.Message
	total int
	// Found by plan: the previous summary (prev, -1 if none; prevMsg), the
	// head kept in front (the task, or what preceded the previous summary),
	// where the body after it starts, the body's older messages (replaced
	// by the summary) and kept ones, the user message that starts a turn
	// split by the cut (-1 if none), and the summary's size limit.
	prev, head, bodyStart int
	prevMsg               *defs.Message
	older, kept           []defs.Message
	turnStart             int
	summaryMax            int
}

func (k *compaction) count(m []defs.Message) int { return k.s.Budget.Fixed + k.s.Budget.Tokens(m) }

// trimOldResults trims the tool results older than the TrimRecent newest
// messages, and reports whether that alone brought the transcript to the
// target (and the provider did not find the request too long).
func (k *compaction) trimOldResults() bool {
	out, trimmed := trimOld(k.out, len(k.out)-k.cfg.TrimRecent, k.cfg.MaxResultLength)
	k.out, k.info.Trimmed = out, trimmed
	if trimmed > 0 {
		k.total = k.count(out)
	}
	if k.total <= k.target && !k.s.ContextTooLong {
		k.info.Strategy = StrategyTrim
		return true
	}
	return false
}

// plan chooses the older messages a summary replaces: those between the
// head (the task, or the previous summary) and the most recent messages
// kept, which get KeepRecentTokens but no more than leaves room for the
// head and the summary within the target (half the body when the provider
// found the request too long; at least WindowMessages older messages with
// StrategyWindow). It reports false when there is nothing older to
// summarise.
func (k *compaction) plan() bool {
	s, cfg, out := k.s, k.cfg, k.out
	k.prev = summaryIndex(out)
	k.head = headLen(out, s.Budget.Tokens, k.usable/4)
	k.bodyStart = k.head
	if k.prev >= 0 {
		k.head = k.prev // the summary follows the task kept when it was written
		k.bodyStart = k.prev + 1
	}
	body := out[k.bodyStart:]
	tok := make([]int, len(body))
	bodyTokens := 0
	for i := range body {
		tok[i] = s.Budget.Tokens(body[i : i+1])
		bodyTokens += tok[i]
	}
	k.summaryMax = cfg.SummaryMaxTokens
	if k.summaryMax <= 0 {
		k.summaryMax = max(k.usable/10, 64)
	}
	keep := cfg.KeepRecentTokens
	if keep <= 0 {
		keep = k.usable / 4
	}
	room := k.target - s.Budget.Fixed - s.Budget.Tokens(out[:k.head]) - k.summaryMax
	keep = min(keep, room)
	if s.ContextTooLong {
		keep = min(keep, bodyTokens/2)
	}
	cut := cutByTokens(body, tok, keep)
	if cfg.Strategy == StrategyWindow {
		cut = max(cut, cutByCount(body, cfg.WindowMessages))
	}
	if cut == 0 {
		return false
	}
	k.older, k.kept = body[:cut], body[cut:]
	k.info.Summarized, k.info.Kept = len(k.older), len(k.kept)
	k.info.SplitTurn = len(k.kept) > 0 && k.kept[0].Role != defs.RoleUser
	k.turnStart = -1
	if k.info.SplitTurn {
		k.turnStart = lastUser(k.older)
	}
	if k.prev >= 0 {
		k.prevMsg = &out[k.prev]
	}
	return true
}

// trimKept trims every tool result after the head, for when nothing older
// is left to summarise and what is kept must be shortened; it reports
// whether anything was trimmed, by this step or by trimOldResults.
func (k *compaction) trimKept() bool {
	if k.info.Trimmed == 0 {
		k.out = slices.Clone(k.out) // out is the transcript itself: read-only
	}
	if n := trimAll(k.out[k.bodyStart:], k.cfg.MaxResultLength); n > 0 {
		k.info.Trimmed += n
		k.total = k.count(k.out)
	}
	k.info.Strategy = StrategyTrim
	return k.info.Trimmed > 0
}

// summarize has the model summarise the older messages when the strategy
// is StrategySummarize, a model is at hand and the breaker is closed. It
// returns the strategy that applies (Fallback when the model is missing,
// failed or is cut off by the breaker) and the model's summary ("" unless
// it wrote one). Only the cancellation of ctx is an error.
func (c *compactor) summarize(ctx context.Context, k *compaction) (Strategy, string, error) {
	cfg := k.cfg
	strategy := cfg.Strategy
	model := cfg.Model
	if model == nil {
		model = k.s.Model
	}
	if strategy == StrategySummarize {
		switch {
		case model == nil:
			strategy = cfg.Fallback
		case c.failures >= cfg.MaxFailures:
			strategy, k.info.Err = cfg.Fallback, ErrBreakerOpen
		}
	}
	var text string
	if strategy == StrategySummarize {
		sys, user := c.request(k.s, k.prevMsg, k.older, k.info.SplitTurn, k.turnStart, k.usable)
		t, err := model.Complete(ctx, sys, user)
		if err == nil && strings.TrimSpace(t) == "" {
			err = errors.New("the model returned an empty summary")
		}
		if err != nil {
			if ctx.Err() != nil {
				return "", "", ctx.Err()
			}
			if serr := c.setFailures(ctx, c.failures+1); serr != nil {
				return "", "", serr
			}
			k.info.Err = err
			strategy = cfg.Fallback
		} else {
			if serr := c.setFailures(ctx, 0); serr != nil {
				return "", "", serr
			}
			text = strings.TrimSpace(t)
		}
	}
	k.info.Strategy = strategy
	k.info.Failures, k.info.BreakerOpen = c.failures, c.failures >= cfg.MaxFailures
	return strategy, text, nil
}

// assemble builds the new transcript: the head, then the summary (the
// model's text, or one made by rule; nothing with StrategyTruncate), then
// the kept messages, whose tool results are trimmed too as a last resort
// when the whole still exceeds the usable window.
func (c *compactor) assemble(k *compaction, strategy Strategy, text string) []defs.Message {
	var next []defs.Message
	if strategy == StrategyTruncate {
		next = make([]defs.Message, 0, k.bodyStart+len(k.kept))
		next = append(next, k.out[:k.bodyStart]...)
	} else {
		if text == "" {
			text = heuristicSummary(k.prevMsg, k.older, k.info.SplitTurn, k.turnStart)
		}
		text = clip(text, k.summaryMax*4)
		k.info.Incremental = k.prevMsg != nil
		k.info.SummaryLen = utf8.RuneCountInString(text)
		sm := c.summaryMessage(k.prevMsg, text, k.older, k.info.SplitTurn)
		next = make([]defs.Message, 0, k.head+1+len(k.kept))
		next = append(next, k.out[:k.head]...)
		next = append(next, sm)
	}
	next = append(next, k.kept...)
	k.total = k.count(next)
	if k.total > k.usable {
		if n := trimAll(next[len(next)-len(k.kept):], k.cfg.MaxResultLength); n > 0 {
			k.info.Trimmed += n
			k.total = k.count(next)
		}
	}
	return next
}

// finish commits msgs and reports the compaction.
func (c *compactor) finish(k *compaction, msgs []defs.Message) error {
	s, info := k.s, k.info
	s.CommitMessages(msgs)
	c.cur.set(msgs)
	c.tokens = k.total - s.Budget.Fixed
	info.TokensAfter, info.MessagesAfter = k.total, len(msgs)
	info.Duration = time.Since(k.start)
	if info.Failures == 0 {
		info.Failures, info.BreakerOpen = c.failures, c.failures >= c.cfg.MaxFailures
	}
	if c.cfg.OnCompaction != nil {
		c.cfg.OnCompaction(info)
	}
	return nil
}

// trimOld returns msgs with the trimmable tool results before index end
// trimmed to max, and how many were; msgs itself is not modified.
func trimOld(msgs []defs.Message, end, max int) ([]defs.Message, int) {
	var out []defs.Message
	n := 0
	for i := 0; i < end && i < len(msgs); i++ {
		if !trimmable(&msgs[i]) || trimSaving(msgs[i].Content, max) <= 0 {
			continue
		}
		if out == nil {
			out = slices.Clone(msgs)
		}
		out[i] = trimMessage(out[i], max)
		n++
	}
	if out == nil {
		return msgs, 0
	}
	return out, n
}

// trimAll trims, in place, every trimmable tool result of msgs, which must
// be owned by the caller.
func trimAll(msgs []defs.Message, max int) int {
	n := 0
	for i := range msgs {
		if trimmable(&msgs[i]) && trimSaving(msgs[i].Content, max) > 0 {
			msgs[i] = trimMessage(msgs[i], max)
			n++
		}
	}
	return n
}

// cutByTokens returns the smallest legal cut c such that body[c:] holds at
// most keep tokens, or the last legal cut when even the last group does not
// fit. A legal cut falls before a message that is not a tool result, so an
// assistant message stays with the results of its calls. 0 means nothing
// can be cut off.
func cutByTokens(body []defs.Message, tok []int, keep int) int {
	acc, cut := 0, len(body)
	for i := len(body) - 1; i >= 0; i-- {
		acc += tok[i]
		if acc > keep {
			break
		}
		if body[i].Role != defs.RoleTool {
			cut = i
		}
	}
	if cut == len(body) {
		for i := len(body) - 1; i > 0; i-- {
			if body[i].Role != defs.RoleTool {
				return i
			}
		}
		return 0
	}
	return cut
}

// cutByCount returns the legal cut that keeps at most n messages (fewer when
// the n-th from the end is a tool result), or, when the last n are all tool
// results, the cut before the assistant message that called them: the
// results the model is about to read are never summarised away.
func cutByCount(body []defs.Message, n int) int {
	for i := max(len(body)-n, 0); i < len(body); i++ {
		if body[i].Role != defs.RoleTool {
			return i
		}
	}
	for i := len(body) - n - 1; i >= 0; i-- {
		if body[i].Role != defs.RoleTool {
			return i
		}
	}
	return 0
}

func lastUser(msgs []defs.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == defs.RoleUser {
			return i
		}
	}
	return -1
}

// summaryMessage builds the summary message replacing prev (nil for the
// first) and the older messages.
func (c *compactor) summaryMessage(prev *defs.Message, text string, older []defs.Message, split bool) defs.Message {
	n := 1
	var read, modified []string
	if prev != nil {
		if k, err := strconv.Atoi(prev.Meta[MetaSummary]); err == nil {
			n = k + 1
		}
		read = splitLines(prev.Meta[MetaReadFiles])
		modified = splitLines(prev.Meta[MetaModifiedFiles])
	}
	r, m := trackFiles(older, c.cfg.Files)
	read, modified = mergeFiles(read, modified, r, m)
	meta := map[string]string{
		MetaSummary:       strconv.Itoa(n),
		MetaSummaryText:   text,
		MetaFailures:      strconv.Itoa(c.failures),
		MetaReadFiles:     strings.Join(read, "\n"),
		MetaModifiedFiles: strings.Join(modified, "\n"),
	}
	if split {
		meta[MetaSplitTurn] = "true"
	}
	for k, v := range meta {
		if v == "" {
			delete(meta, k)
		}
	}
	return defs.Message{Role: defs.RoleUser, Content: SummaryContent(text, read, modified), Meta: meta}
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
	var b strings.Builder
	b.WriteString("<summary>\nThis summary replaces the earlier part of the conversation; the messages after it continue from where it ends.\n\n")
	b.WriteString(strings.TrimSpace(text))
	b.WriteString("\n")
	if len(read) > 0 || len(modified) > 0 {
		b.WriteString("\n")
	}
	if len(read) > 0 {
		b.WriteString("<read-files>\n" + strings.Join(read, "\n") + "\n</read-files>\n")
	}
	if len(modified) > 0 {
		b.WriteString("<modified-files>\n" + strings.Join(modified, "\n") + "\n</modified-files>\n")
	}
	b.WriteString("</summary>")
	return b.String()
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// request renders the summarising call: the previous summary to update,
// then the older messages, bounded by SummaryInputTokens (the oldest are
// left out first).
func (c *compactor) request(s *effects.Step, prev *defs.Message, older []defs.Message, split bool, turnStart, usable int) (system, user string) {
	budget := c.cfg.SummaryInputTokens
	if budget <= 0 {
		budget = usable / 2
	}
	countText := func(t string) int { return s.Budget.Tokens([]defs.Message{{Role: defs.RoleUser, Content: t}}) }
	var b strings.Builder
	if prev != nil {
		pt := prev.Meta[MetaSummaryText]
		if pt == "" {
			pt = prev.Content
		}
		pt = clip(pt, budget) // a quarter of the budget at four characters a token
		b.WriteString("<previous-summary>\n" + pt + "\n</previous-summary>\n\n")
		b.WriteString("Update the previous summary with the conversation that followed it, below. Keep what still matters from the previous summary; write one summary.\n\n")
	} else {
		b.WriteString("Summarise the conversation below.\n\n")
	}
	if split {
		b.WriteString("The conversation ends inside a turn that is still in progress (marked below); summarise its beginning under \"Current turn\".\n\n")
	}
	left := budget - countText(b.String()) - 32
	// The beginning of a split turn is kept whatever the bound.
	var turn string
	if turnStart >= 0 {
		turn = "[The turn below is still in progress: it continues in the messages kept after this summary.]\n" + renderMessage(&older[turnStart])
		left -= countText(turn)
	}
	pieces := make([]string, 0, len(older))
	from := len(older)
	for i := len(older) - 1; i >= 0; i-- {
		if i == turnStart {
			pieces = append(pieces, turn)
			from = i
			continue
		}
		p := renderMessage(&older[i])
		t := renderedTokens(s, older[i:i+1], countText)
		if t < 0 {
			t = countText(p)
		}
		if t > left {
			break
		}
		left -= t
		pieces = append(pieces, p)
		from = i
	}
	b.WriteString("<conversation>\n")
	if from > 0 {
		fmt.Fprintf(&b, "[… %d earlier messages left out …]\n\n", from)
	}
	if turnStart >= 0 && from > turnStart {
		b.WriteString(turn + "\n")
		if from > turnStart+1 {
			fmt.Fprintf(&b, "[… %d messages of this turn left out …]\n\n", from-turnStart-1)
		}
	}
	for i := len(pieces) - 1; i >= 0; i-- {
		b.WriteString(pieces[i])
		b.WriteString("\n")
	}
	b.WriteString("</conversation>")
	return c.cfg.SystemPrompt, b.String()
}

// renderedTokens bounds the tokens of renderMessage(&m[0]) without
// counting its text: the message's own count, which the runtime keeps from
// counting the transcript, bounds its rendered content (clipped or not,
// with the message's framing to spare), and the header and the call
// markers are counted apart; headers repeat, so their counts are kept too.
// Counting the rendered text itself would count every summarised message a
// second time. It returns -1 for a message rendered from something else
// than its content (an earlier summary) or clipped by more than a quarter,
// which must be counted as rendered.
func renderedTokens(s *effects.Step, m []defs.Message, countText func(string) int) int {
	// A content clipped by much makes the message's own count a loose
	// bound: such a message is counted as rendered.
	loose := func(text string, limit int) bool { return len(text) > limit+limit/4 }
	var header string
	switch m[0].Role {
	case defs.RoleTool:
		if loose(m[0].Content, 2000) {
			return -1
		}
		kind := "result"
		if m[0].IsError {
			kind = "error"
		}
		header = "[tool " + kind + ": " + m[0].Name + "]\n"
	case defs.RoleAssistant:
		if loose(m[0].Content, 4000) {
			return -1
		}
		for _, c := range m[0].ToolCalls {
			if loose(string(c.Arguments), 500) {
				return -1
			}
		}
		header = "[assistant]\n"
	default:
		if m[0].Meta[MetaSummary] != "" || loose(m[0].Content, 4000) {
			return -1
		}
		header = "[" + string(m[0].Role) + "]\n"
	}
	const perCall = 4 // "→ call ", a space and a newline
	return s.Budget.Tokens(m) + countText(header) + perCall*len(m[0].ToolCalls) + 2
}

// renderMessage renders one message for the summariser; long contents are
// clipped.
func renderMessage(m *defs.Message) string {
	var b strings.Builder
	switch m.Role {
	case defs.RoleTool:
		kind := "result"
		if m.IsError {
			kind = "error"
		}
		fmt.Fprintf(&b, "[tool %s: %s]\n%s\n", kind, m.Name, clip(m.Content, 2000))
	case defs.RoleAssistant:
		b.WriteString("[assistant]\n")
		if c := strings.TrimSpace(m.Content); c != "" {
			b.WriteString(clip(c, 4000) + "\n")
		}
		for _, tc := range m.ToolCalls {
			fmt.Fprintf(&b, "→ call %s %s\n", tc.Name, clip(string(tc.Arguments), 500))
		}
	default:
		if m.Meta[MetaSummary] != "" {
			return "[earlier summary]\n" + clip(m.Meta[MetaSummaryText], 4000) + "\n"
		}
		fmt.Fprintf(&b, "[%s]\n%s\n", m.Role, clip(m.Content, 4000))
	}
	return b.String()
}
