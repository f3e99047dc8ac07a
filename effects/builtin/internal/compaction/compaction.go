// Package compaction is the engine behind builtin.Compact: it decides when
// a request is over its threshold, trims old tool results, cuts the
// conversation where no tool call is separated from its result, has the
// model (or a rule) summarise the older part, and commits the shorter
// transcript once.
//
// Package builtin owns the public face (builtin.CompactConfig, builtin.Info,
// the strategies and their documentation) and applies the defaults; this
// package takes a Config whose fields are all set.
package compaction

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/effects/builtin/internal/transcript"
	"github.com/reprompt/reprompt/state"
)

// Strategy is how the older part of a conversation is shortened; the
// values are those of builtin.Strategy.
type Strategy string

// Strategies, as builtin documents them.
const (
	Summarize Strategy = "summarize"
	Truncate  Strategy = "truncate"
	Window    Strategy = "window"
	Heuristic Strategy = "heuristic"
	// Trim is reported when trimming old tool results was enough.
	Trim Strategy = "trim"
)

// Files says which tool calls read or modify files (builtin.FileTracking).
type Files struct {
	ReadTools, ModifyTools, ArgKeys []string
}

// Config is builtin.CompactConfig with its defaults applied: every field
// builtin gives a default is set. KeepRecentTokens, SummaryInputTokens and
// SummaryMaxTokens may be zero, for a share of the usable window; Window
// zero means Step.Budget's; State nil keeps the failure count in memory
// only; OnCompaction may be nil.
type Config struct {
	Threshold, Target  float64
	Window, Reserve    int
	KeepRecentTokens   int
	WindowMessages     int
	TrimRecent         int
	MaxResultLength    int
	Strategy, Fallback Strategy
	Model              effects.Completer
	SystemPrompt       string
	SummaryInputTokens int
	SummaryMaxTokens   int
	// Continue sends the summarising call as the continuation of the
	// run's own request when the model can (effects.Continuer).
	Continue     bool
	MaxFailures  int
	Files        Files
	State        *state.Store
	StateKey     string
	OnCompaction func(Info)
}

// Info is what one compaction did (builtin.Info documents its fields).
type Info struct {
	Step                          int
	Strategy                      Strategy
	Forced                        bool
	TokensBefore, TokensAfter     int
	MessagesBefore, MessagesAfter int
	Trimmed                       int
	Summarized, Kept              int
	SplitTurn                     bool
	Incremental                   bool
	SummaryLen                    int
	Duration                      time.Duration
	Err                           error
	Failures                      int
	BreakerOpen                   bool
}

// ErrBreakerOpen is Info.Err once the circuit breaker is open
// (builtin.ErrBreakerOpen).
var ErrBreakerOpen = errors.New("compaction: summarising failed too often; using the fallback strategy")

// New returns the compaction effect for cfg, whose defaults must be
// applied. It is safe for concurrent use.
func New(cfg Config) effects.Func {
	c := &compactor{cfg: cfg}
	return c.run
}

type compactor struct {
	cfg      Config
	mu       sync.Mutex
	cur      transcript.Cursor
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
		if !c.cur.Valid(msgs) {
			c.cur.Reset()
			c.tokens = 0
		}
		if c.cur.N() < len(msgs) {
			c.tokens += s.Budget.Tokens(msgs[c.cur.N():])
			c.cur.Set(msgs)
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
		c.cur.Set(msgs)
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
		if n, err := strconv.Atoi(msgs[i].Meta[transcript.MetaFailures]); err == nil {
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
		if msgs[i].Meta[transcript.MetaSummary] != "" {
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
	for n < len(msgs) && n < maxHead-1 && msgs[n].Role == defs.RoleSystem && msgs[n].Meta[transcript.MetaSummary] == "" {
		n++
	}
	if n < len(msgs) && msgs[n].Role == defs.RoleUser && msgs[n].Meta[transcript.MetaSummary] == "" {
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
	cfg    *Config
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
		k.info.Strategy = Trim
		return true
	}
	return false
}

// plan chooses the older messages a summary replaces: those between the
// head (the task, or the previous summary) and the most recent messages
// kept, which get KeepRecentTokens but no more than leaves room for the
// head and the summary within the target (half the body when the provider
// found the request too long; at least WindowMessages older messages with
// Window). It reports false when there is nothing older to
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
	if cfg.Strategy == Window {
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
	k.info.Strategy = Trim
	return k.info.Trimmed > 0
}

// summarize has the model summarise the older messages when the strategy
// is Summarize, a model is at hand and the breaker is closed. It
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
	if strategy == Summarize {
		switch {
		case model == nil:
			strategy = cfg.Fallback
		case c.failures >= cfg.MaxFailures:
			strategy, k.info.Err = cfg.Fallback, ErrBreakerOpen
		}
	}
	var text string
	if strategy == Summarize {
		var t string
		var err error
		if cont, ok := model.(effects.Continuer); ok && cfg.Continue && !k.s.ContextTooLong && k.info.TokensBefore < k.usable {
			// The messages to summarise, as the provider cached them (not
			// as trimOldResults may have trimmed them).
			t, err = cont.Continue(ctx, k.s.Transcript()[:k.bodyStart+len(k.older)], c.instruction(k))
			if err != nil && ctx.Err() == nil {
				// The model called one of the run's tools
				// (effects.ErrCalledTool), or the provider refused the
				// continuation (which carries the whole history, past
				// SummaryInputTokens' bound: too long, say): ask again on
				// its own, without tools, bounded.
				sys, user := c.request(k.s, k.prevMsg, k.older, k.info.SplitTurn, k.turnStart, k.usable)
				t, err = model.Complete(ctx, sys, user)
			}
		} else {
			sys, user := c.request(k.s, k.prevMsg, k.older, k.info.SplitTurn, k.turnStart, k.usable)
			t, err = model.Complete(ctx, sys, user)
		}
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
// model's text, or one made by rule; nothing with Truncate), then
// the kept messages, whose tool results are trimmed too as a last resort
// when the whole still exceeds the usable window.
func (c *compactor) assemble(k *compaction, strategy Strategy, text string) []defs.Message {
	var next []defs.Message
	if strategy == Truncate {
		next = make([]defs.Message, 0, k.bodyStart+len(k.kept))
		next = append(next, k.out[:k.bodyStart]...)
	} else {
		if text == "" {
			text = heuristicSummary(k.prevMsg, k.older, k.info.SplitTurn, k.turnStart)
		}
		text = transcript.Clip(text, k.summaryMax*4)
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
	c.cur.Set(msgs)
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
		if !transcript.Trimmable(&msgs[i]) || transcript.TrimSaving(msgs[i].Content, max) <= 0 {
			continue
		}
		if out == nil {
			out = slices.Clone(msgs)
		}
		out[i] = transcript.TrimMessage(out[i], max)
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
		if transcript.Trimmable(&msgs[i]) && transcript.TrimSaving(msgs[i].Content, max) > 0 {
			msgs[i] = transcript.TrimMessage(msgs[i], max)
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
		if k, err := strconv.Atoi(prev.Meta[transcript.MetaSummary]); err == nil {
			n = k + 1
		}
		read = splitLines(prev.Meta[transcript.MetaReadFiles])
		modified = splitLines(prev.Meta[transcript.MetaModifiedFiles])
	}
	r, m := trackFiles(older, c.cfg.Files)
	read, modified = mergeFiles(read, modified, r, m)
	meta := map[string]string{
		transcript.MetaSummary:       strconv.Itoa(n),
		transcript.MetaSummaryText:   text,
		transcript.MetaFailures:      strconv.Itoa(c.failures),
		transcript.MetaReadFiles:     strings.Join(read, "\n"),
		transcript.MetaModifiedFiles: strings.Join(modified, "\n"),
	}
	if split {
		meta[transcript.MetaSplitTurn] = "true"
	}
	for k, v := range meta {
		if v == "" {
			delete(meta, k)
		}
	}
	return defs.Message{Role: defs.RoleUser, Content: SummaryContent(text, read, modified), Meta: meta}
}

// SummaryContent returns the content of a summary message: text and the file
// lists, labelled and wrapped in <summary>…</summary> (builtin.SummaryContent).
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

// instruction is the last message of a summarising call that continues
// the run's request (Config.Continue): the summariser's system prompt as
// text, and what the summary is for. The call sends the messages the
// summary replaces, the messages kept after it are not.
func (c *compactor) instruction(k *compaction) string {
	var b strings.Builder
	b.WriteString(c.cfg.SystemPrompt)
	b.WriteString("\n\nStop working on the task and do not call tools now: answer with the summary only. ")
	if k.prevMsg != nil {
		b.WriteString("Update the previous summary (the <summary> message above) with the conversation that followed it; keep what still matters from it and write one summary. ")
	} else {
		b.WriteString("Summarise the conversation above. ")
	}
	b.WriteString("The agent keeps the messages that follow it verbatim after the summary.")
	if k.info.SplitTurn {
		b.WriteString(" The conversation above ends inside a turn still in progress: summarise its beginning under \"Current turn\".")
	}
	return b.String()
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
		pt := prev.Meta[transcript.MetaSummaryText]
		if pt == "" {
			pt = prev.Content
		}
		pt = transcript.Clip(pt, budget) // a quarter of the budget at four characters a token
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
		if m[0].Meta[transcript.MetaSummary] != "" || loose(m[0].Content, 4000) {
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
		fmt.Fprintf(&b, "[tool %s: %s]\n%s\n", kind, m.Name, transcript.Clip(m.Content, 2000))
	case defs.RoleAssistant:
		b.WriteString("[assistant]\n")
		if c := strings.TrimSpace(m.Content); c != "" {
			b.WriteString(transcript.Clip(c, 4000) + "\n")
		}
		for _, tc := range m.ToolCalls {
			fmt.Fprintf(&b, "→ call %s %s\n", tc.Name, transcript.Clip(string(tc.Arguments), 500))
		}
	default:
		if m.Meta[transcript.MetaSummary] != "" {
			return "[earlier summary]\n" + transcript.Clip(m.Meta[transcript.MetaSummaryText], 4000) + "\n"
		}
		fmt.Fprintf(&b, "[%s]\n%s\n", m.Role, transcript.Clip(m.Content, 4000))
	}
	return b.String()
}

// heuristicSummary summarises msgs without a model, after seed 004's rule
// based compressor: the last three user requests, assistant notes and tool
// errors (clipped), the tools used with their failures, the request that
// began a split turn, and the previous summary (clipped) it updates.
func heuristicSummary(prev *defs.Message, msgs []defs.Message, split bool, turnStart int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Summarised by rule, without a model: %d earlier messages.\n", len(msgs))
	if prev != nil {
		pt := prev.Meta[transcript.MetaSummaryText]
		if pt == "" {
			pt = prev.Content
		}
		b.WriteString("\nEarlier summary:\n" + transcript.Clip(pt, 1500) + "\n")
	}
	var users, notes, errs []string
	type use struct{ calls, errors int }
	tools := map[string]*use{}
	var order []string
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case defs.RoleUser:
			if m.Meta[transcript.MetaSummary] == "" {
				users = append(users, transcript.Clip(transcript.OneLine(m.Content), 200))
			}
		case defs.RoleAssistant:
			if c := strings.TrimSpace(m.Content); c != "" {
				notes = append(notes, transcript.Clip(transcript.OneLine(c), 200))
			}
			for _, tc := range m.ToolCalls {
				u := tools[tc.Name]
				if u == nil {
					u = &use{}
					tools[tc.Name] = u
					order = append(order, tc.Name)
				}
				u.calls++
			}
		case defs.RoleTool:
			if m.IsError {
				if u := tools[m.Name]; u != nil {
					u.errors++
				}
				errs = append(errs, m.Name+": "+transcript.Clip(transcript.OneLine(m.Content), 160))
			}
		}
	}
	list := func(title string, items []string, n int) {
		if len(items) == 0 {
			return
		}
		b.WriteString("\n" + title + ":\n")
		for _, it := range items[max(len(items)-n, 0):] {
			b.WriteString("- " + it + "\n")
		}
	}
	list("User requests (most recent last)", users, 3)
	list("Assistant notes (most recent last)", notes, 3)
	list("Tool errors (most recent last)", errs, 3)
	if len(order) > 0 {
		b.WriteString("\nTools used:")
		for i, name := range order {
			u := tools[name]
			sep := ","
			if i == 0 {
				sep = ""
			}
			fmt.Fprintf(&b, "%s %s ×%d", sep, name, u.calls)
			if u.errors > 0 {
				fmt.Fprintf(&b, " (%d failed)", u.errors)
			}
		}
		b.WriteString("\n")
	}
	if split {
		b.WriteString("\nCurrent turn (in progress, continues after this summary)")
		if turnStart >= 0 {
			b.WriteString(": it began with the request \"" + transcript.Clip(transcript.OneLine(msgs[turnStart].Content), 300) + "\"")
		}
		b.WriteString(".\n")
	}
	return strings.TrimSpace(b.String())
}

// trackFiles returns the files read and modified by the tool calls of msgs,
// leaving out the calls whose result is an error.
func trackFiles(msgs []defs.Message, f Files) (read, modified []string) {
	failed := map[string]bool{}
	for i := range msgs {
		if msgs[i].Role == defs.RoleTool && msgs[i].IsError {
			failed[msgs[i].ToolCallID] = true
		}
	}
	for i := range msgs {
		for _, tc := range msgs[i].ToolCalls {
			isRead, isMod := slices.Contains(f.ReadTools, tc.Name), slices.Contains(f.ModifyTools, tc.Name)
			if (!isRead && !isMod) || failed[tc.ID] {
				continue
			}
			paths := argPaths(tc.Arguments, f.ArgKeys)
			if isMod {
				modified = append(modified, paths...)
			} else {
				read = append(read, paths...)
			}
		}
	}
	return read, modified
}

// argPaths returns the string (or strings) under the first of keys found in
// the JSON object args.
func argPaths(args json.RawMessage, keys []string) []string {
	var obj map[string]any
	if json.Unmarshal(args, &obj) != nil {
		return nil
	}
	for _, k := range keys {
		switch v := obj[k].(type) {
		case string:
			if v != "" {
				return []string{v}
			}
		case []any:
			var out []string
			for _, e := range v {
				if s, ok := e.(string); ok && s != "" {
					out = append(out, s)
				}
			}
			if len(out) > 0 {
				return out
			}
		}
	}
	return nil
}

// mergeFiles merges file lists: modified files are not listed as read.
// Both results are sorted and free of duplicates.
func mergeFiles(read, modified, newRead, newModified []string) ([]string, []string) {
	mod := map[string]bool{}
	for _, p := range append(slices.Clone(modified), newModified...) {
		mod[p] = true
	}
	rd := map[string]bool{}
	for _, p := range append(slices.Clone(read), newRead...) {
		if !mod[p] {
			rd[p] = true
		}
	}
	return sortedKeys(rd), sortedKeys(mod)
}

func sortedKeys(m map[string]bool) []string {
	if len(m) == 0 {
		return nil
	}
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
