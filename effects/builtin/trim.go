package builtin

import (
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/effects/builtin/internal/trimming"
)

// Defaults of TrimConfig.
const (
	DefaultMaxResultLength = 500
	DefaultPreserveRecent  = 4
	DefaultMinSaving       = 200
	DefaultTrimBatch       = 8
)

// TrimConfig configures TrimToolResults. The zero value means the defaults.
type TrimConfig struct {
	// MaxResultLength is the length in bytes (cut at a character boundary)
	// an old tool result keeps, before a marker saying how much was cut.
	// Zero means DefaultMaxResultLength.
	MaxResultLength int
	// PreserveRecent is how many of the most recent tool-role messages are
	// never trimmed. Zero means DefaultPreserveRecent; a negative value
	// preserves none.
	PreserveRecent int
	// MinSaving is the fewest bytes a cut must save to be made: a small cut
	// is not worth the prompt cache it breaks. Zero means DefaultMinSaving;
	// a negative value means any saving.
	MinSaving int
	// PreserveTurns, if positive, replaces PreserveRecent: a result is old
	// once PreserveTurns assistant messages follow it, that is once the
	// model has answered after reading it in full that many times. With 1
	// and Batch 1, each result is trimmed right after the model's next
	// reply: the rewrite then starts just before that reply, a part of
	// the request no provider had cached yet, so trimming costs almost no
	// prompt cache (see Defaults).
	PreserveTurns int
	// Batch is how many old results must wait to be trimmed before the
	// transcript is rewritten (all of them at once). Zero means
	// DefaultTrimBatch; 1 trims as soon as one result is old enough.
	Batch int
}

func (c TrimConfig) normalized() TrimConfig {
	if c.MaxResultLength <= 0 {
		c.MaxResultLength = DefaultMaxResultLength
	}
	switch {
	case c.PreserveRecent == 0:
		c.PreserveRecent = DefaultPreserveRecent
	case c.PreserveRecent < 0:
		c.PreserveRecent = 0
	}
	switch {
	case c.MinSaving == 0:
		c.MinSaving = DefaultMinSaving
	case c.MinSaving < 0:
		c.MinSaving = 1
	}
	if c.Batch <= 0 {
		c.Batch = DefaultTrimBatch
	}
	return c
}

// TrimToolResults returns an effect (kind trim_tool_results, to register in
// the AfterReply phase) that cuts long results of old tool calls.
//
// A tool result is old once PreserveRecent newer tool-role messages follow
// it. An old result is trimmed to MaxResultLength if that saves at least
// MinSaving bytes; error results are never cut; a trimmed message is marked
// with Meta[MetaTrimmed] and never looked at again.
//
// Trimming rewrites earlier messages and so breaks the provider's cached
// prefix from the first trimmed message on. To break it rarely, results are
// trimmed in batches: the transcript is rewritten (one CommitMessages) only
// when at least Batch old results wait to be trimmed, and then all of them
// are trimmed together. With the defaults the prefix breaks about once every
// eight long tool results instead of at every step. (In a simulated 320-step
// coding session under a 32k window, examples/longsession, with cached
// tokens at a tenth of the price, batches of 8 billed as much or up to 7%
// less input than batches of 4 over four seeds, and about 40% fewer
// rewrites; trimming at every step, with a moving boundary, billed 30–55%
// more.) When the window is tight, Compact trims whatever is needed at once,
// so a large batch never overflows it.
//
// After each run the effect declares where its next run may start
// rewriting (effects.Step.WillRewrite): at the first result it may trim
// then, or nowhere. With PreserveTurns that is exact (the next run sees
// one more reply); with PreserveRecent it is the first result long enough
// to trim, since the next step may bring any number of results. The
// runtime sends the part before it as llm.Request.Committed, the prefix a
// provider's breakpoint can cover for the next request.
//
// The effect remembers how far it read the transcript and which results
// wait, so a step where nothing is trimmed costs what is new since the last
// step, not the length of the history. Build the effect once per run,
// outside the prompt function (Config.Register does): built anew at each
// execution it still works, but reads the whole transcript every step. It is
// safe for concurrent use; used by several runs at once it reads each
// transcript anew whenever the run changes.
func TrimToolResults(cfg TrimConfig) effects.Func {
	return trimming.New(trimming.Config(cfg.normalized()))
}
