package effects

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/internal/stepmods"
)

// Step is what an effect sees of the current step and how it changes it.
//
// Changes come in two kinds, named so:
//   - a view (AppendMessages, ReplaceMessages, LimitTools, LimitSystems,
//     SetVariable, disabling and reminding definitions) changes only this
//     step's request;
//   - a commit (CommitMessages, CommitAppend) changes the transcript for
//     this step and all later ones. Compaction and trimming commit, once, so that the requests
//     after them share a stable prefix again.
//
// Effects run in registration order and each sees the changes made by the
// effects before it. In the AfterReply phase the request was already sent:
// only commits take effect there, and views, limits, variables, disables and
// reminders made in that phase are dropped. A Step is valid only during the
// call of the effect it is passed to.
type Step struct {
	// Number is the step number, from 0.
	Number int
	// Phase is the phase being run.
	Phase Phase
	// Tools, Systems and Variables are the definitions now declared.
	Tools, Systems, Variables defs.Collection
	// LastTool is the most recent tool result of the run, nil before any.
	LastTool *defs.ToolResult
	// Reply is the model's reply of this step; nil in the BeforeCall phase.
	Reply *defs.Message
	// Results are the tool results of this step; nil in the BeforeCall
	// phase.
	Results []defs.ToolResult
	// Budget describes the context window and counts tokens. Its zero value
	// means the runtime knows no window.
	Budget Budget
	// Model asks the run's model for a completion (summaries); nil when the
	// runtime offers none.
	Model Completer
	// Stats are the run's totals before this step's model call (BeforeCall)
	// or after it (AfterReply).
	Stats RunStats
	// ContextTooLong is set when the phase runs again because the provider
	// rejected this step's request as too long: an effect that compacts
	// should do so now, whatever its threshold.
	ContextTooLong bool

	base      []defs.Message // the transcript
	view      []defs.Message // the messages of this step's request
	owned     bool           // view is a private copy that may be appended to
	verbatim  int            // leading messages of view that are base itself
	appended  []defs.Message // messages appended since the last replace
	replaced  bool           // a ReplaceMessages view is in force
	rewritten bool           // base is no longer the transcript Budget describes
	spare     []defs.Message // the copy CopyTranscript made, until it is committed
	mods      stepmods.Mods
	current   *slot
}

// Budget is the context window of a step and a way to count tokens.
type Budget struct {
	// Window is the model's context window in tokens; 0 means unknown.
	Window int
	// Reserve is the part of the window kept for the model's output.
	Reserve int
	// Fixed is the token count of what is sent beside the messages: the
	// system prompt and the tool schemas (as of the last rendered request).
	Fixed int
	// Count returns the token count of msgs. The runtime's counter caches
	// counts per transcript message, so counting the step's messages costs
	// only what is new. nil means an estimate of four characters a token.
	Count func(msgs []defs.Message) int
	// Prefix, if set, returns the token count of the first k transcript
	// messages in constant time. It describes the transcript the step
	// started from, so it is not used once an effect committed another.
	Prefix func(k int) int
}

// Tokens returns the token count of msgs under b: Count, or the estimate.
func (b Budget) Tokens(msgs []defs.Message) int {
	if b.Count != nil {
		return b.Count(msgs)
	}
	n := 0
	for _, m := range msgs {
		n += stepmods.EstimateTokens(m)
	}
	return n
}

// Tokens returns the estimated input tokens of the step's request as it
// stands: Budget.Fixed plus the tokens of Messages.
func (s *Step) Tokens() int {
	if s.Budget.Prefix != nil && s.verbatim > 0 && !s.rewritten {
		return s.Budget.Fixed + s.Budget.Prefix(s.verbatim) + s.Budget.Tokens(s.view[s.verbatim:])
	}
	return s.Budget.Fixed + s.Budget.Tokens(s.view)
}

// Completer asks a model for one completion outside the run's transcript,
// as compaction does to summarise.
type Completer interface {
	// Complete sends a request made of the system prompt system (none when
	// "") and one user message, user, with no tools, and returns the text
	// of the reply. Nothing is added to the transcript; the usage counts in
	// the run's totals. It honours ctx and the run's retry policy, and
	// returns the model's error as is (an *llm.ModelError from the
	// runtime's). It may be called from an effect only while it runs.
	Complete(ctx context.Context, system, user string) (string, error)
}

// Continuer is a Completer that can also send a completion as the
// continuation of the run's own requests, so that the provider serves
// their cached prefix: the runtime's Step.Model is one when the
// completions go to the run's model (no Config.Summarizer).
type Continuer interface {
	Completer
	// Continue sends the tools and system prompt of the run's last
	// request, then msgs (the transcript, as Step.Transcript returns it),
	// then instruction as a user message, and returns the text of the
	// reply. The request is the run's own up to the instruction, so that
	// its input is mostly read from the provider's prompt cache; the
	// model is told of tools it must not call, and a reply that calls one
	// is an error wrapping ErrCalledTool, whatever text it has (often
	// the preamble of the call, not what was asked): ask again with
	// Complete. Otherwise as Complete.
	Continue(ctx context.Context, msgs []defs.Message, instruction string) (string, error)
}

// ErrCalledTool is the error of a Continuer.Continue whose reply called a
// tool instead of answering.
var ErrCalledTool = errors.New("the model called a tool instead of answering")

// RunStats are a run's totals so far.
type RunStats struct {
	// Steps is the number of model calls made.
	Steps        int
	InputTokens  int
	OutputTokens int
	// CachedTokens and CacheWriteTokens are the parts of InputTokens read
	// from and written to the providers' prompt caches, CacheWrite1hTokens
	// the part of the writes to entries that live an hour (llm.Usage).
	CachedTokens       int
	CacheWriteTokens   int
	CacheWrite1hTokens int
	// Cost is the estimated cost in US dollars, from Config.Pricing.
	Cost float64
	// Elapsed is the wall time the run spent on its steps since it
	// started: the time between a conversation's turns, and while the run
	// is paused for a decision or an answer, is not counted.
	Elapsed time.Duration
}

// NewStep returns the step effects see, over the transcript msgs. The step
// does not modify msgs.
func NewStep(number int, msgs []defs.Message) *Step {
	return &Step{Number: number, base: msgs, view: msgs, verbatim: len(msgs)}
}

// Messages returns the messages this step will send, as changed by the
// effects so far. The slice is read-only.
func (s *Step) Messages() []defs.Message { return s.view }

// Transcript returns the run's transcript as committed so far. The slice is
// read-only.
func (s *Step) Transcript() []defs.Message { return s.base }

// AppendMessages adds messages to the end of this step's request only (a
// view).
func (s *Step) AppendMessages(msgs ...defs.Message) {
	if !s.owned {
		s.view = slices.Clip(s.view)
		s.owned = true
	}
	s.view = append(s.view, msgs...)
	if !s.replaced {
		s.appended = append(s.appended, msgs...)
	}
	s.mods.Viewed = true
}

// ReplaceMessages replaces the messages of this step's request only (a
// view): the transcript is unchanged and the next step starts from it again.
// s keeps msgs; the caller must not modify it afterwards.
func (s *Step) ReplaceMessages(msgs []defs.Message) {
	s.view, s.owned = slices.Clip(msgs), false
	s.verbatim = 0
	s.replaced, s.appended = true, nil
	s.mods.Viewed = true
}

// CommitMessages replaces the transcript with msgs for this step and every
// later one (a commit). Messages appended earlier in this step
// (AppendMessages) stay appended, after msgs; a ReplaceMessages view made
// earlier is dropped. Later views apply on top of msgs. s keeps msgs; the
// caller must not modify it afterwards.
func (s *Step) CommitMessages(msgs []defs.Message) {
	msgs = slices.Clip(msgs)
	s.base, s.view, s.owned = msgs, msgs, false
	s.verbatim = len(msgs)
	s.rewritten = true
	s.mods.Committed, s.mods.Transcript, s.mods.Room = true, msgs, false
	if spare := s.spare; len(msgs) > 0 && len(spare) > 0 && &msgs[0] == &spare[0] && len(msgs) <= cap(spare) {
		// The copy CopyTranscript made: its room is the runtime's.
		s.mods.Transcript, s.mods.Room = spare[:len(msgs)], true
	}
	s.spare = nil
	s.mods.Viewed = false
	s.replaced = false
	if appended := s.appended; len(appended) > 0 {
		s.appended = nil
		s.AppendMessages(appended...)
	}
}

// CopyTranscript returns a copy of the transcript, to change and commit
// with CommitMessages: the way to rewrite a few messages (trimming does).
// The copy has room after its end for the messages the step adds (the
// reply and its tool results), so that the runtime appends them without
// copying the transcript once more. The caller owns the copy until it
// commits it, and must not use it afterwards.
func (s *Step) CopyTranscript() []defs.Message {
	n := len(s.base)
	s.spare = append(make([]defs.Message, 0, n+n/16+8), s.base...)
	return s.spare
}

// CommitAppend appends msgs to the transcript for this step and every later
// one (a commit that keeps the transcript before them, so a provider's
// prompt cache still holds). It is how a message joins the transcript after
// the first execution, when something changed: a message declared by the
// prompt function (prompt.DefMessage, prompt.User) is added only once. A
// typical use:
//
//	p.Effect(effects.On(done), func(_ context.Context, s *effects.Step) error {
//		if done {
//			s.CommitAppend(defs.UserMessage("All tasks are done: write the summary."))
//		}
//		return nil
//	})
//
// Messages appended earlier in this step as a view stay after them. s keeps
// msgs; the caller must not modify them afterwards.
func (s *Step) CommitAppend(msgs ...defs.Message) {
	if len(msgs) == 0 {
		return
	}
	base := make([]defs.Message, 0, len(s.base)+len(msgs))
	s.CommitMessages(append(append(base, s.base...), msgs...))
}

// LimitTools offers only the named tools at this step. It never adds a
// tool: names that are not declared are ignored, and calling it again
// narrows the set further (the intersection). A tool left out is treated as
// disabled: if the model calls it, it is not run.
func (s *Step) LimitTools(names ...string) { s.mods.Tools = intersect(s.mods.Tools, names) }

// LimitSystems keeps only the named system parts in this step's system
// prompt. Like LimitTools it only removes, and repeated calls intersect.
func (s *Step) LimitSystems(names ...string) { s.mods.Systems = intersect(s.mods.Systems, names) }

func intersect(have, names []string) []string {
	if have == nil {
		out := make([]string, 0, len(names))
		return append(out, names...)
	}
	out := have[:0]
	for _, n := range have {
		if slices.Contains(names, n) {
			out = append(out, n)
		}
	}
	return out
}

// SetVariable sets a variable for this step only (a view). A declared
// variable keeps its position and shows value instead; a new name is
// rendered after the declared variables. A string is rendered as is, any
// other value as YAML, by the rule of prompt.DefData (the YAML of its JSON
// form).
func (s *Step) SetVariable(name string, value any) {
	for i := range s.mods.Variables {
		if s.mods.Variables[i].Name == name {
			s.mods.Variables[i].Value = value
			return
		}
	}
	s.mods.Variables = append(s.mods.Variables, stepmods.Variable{Name: name, Value: value})
}

// Cleanup registers fn to run before the current effect runs again, when
// the effect is no longer registered, and when the run ends (runtime.Runner.Close,
// called by the runtime's Runner.Close), as the cleanup a React effect
// returns. Cleanups run effect by effect in registration order, and an
// effect's cleanups in the order they were registered. A cleanup that
// panics is reported as an *Error naming the effect, with Cleanup set.
// Cleanup panics when called outside an effect.
func (s *Step) Cleanup(fn func()) {
	if s.current == nil {
		panic("effects: Step.Cleanup called outside a running effect")
	}
	s.current.cleanups = append(s.current.cleanups, fn)
}

// WillRewrite declares that the running effect may rewrite the
// transcript from message from on (an index into Transcript() as it stands
// when called: commit first) the next time it runs, and nothing before
// it; from >= len(Transcript()) declares that it will rewrite none of it.
// A declaration holds until the effect runs again, which declares anew
// (or not). The runtime sends the part before the earliest declared
// rewrite as llm.Request.Committed, where a provider adapter places a
// prompt-cache breakpoint that the next request reads: declare only what
// the next run will leave alone, since a rewrite inside the declared part
// costs that request its cache reads. An effect that never declares puts
// no bound on it, and while none declares the runtime sends no committed
// part at all.
func (s *Step) WillRewrite(from int) {
	from = max(from, 0)
	if !s.mods.Rewrites || from < s.mods.RewriteFrom {
		s.mods.Rewrites, s.mods.RewriteFrom = true, from
	}
	if c := s.current; c != nil {
		c.rewrites, c.from, c.of = true, from, s.base
	}
}

// Mods returns the changes made to the step. The runtime calls it after the
// effects ran.
func (s *Step) Mods() *stepmods.Mods {
	if s.mods.Viewed {
		s.mods.Messages = s.view
	}
	s.mods.Verbatim = s.verbatim
	return &s.mods
}
