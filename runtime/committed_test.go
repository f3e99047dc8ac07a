package runtime_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// TestCommittedPart: the runtime sends as Request.Committed the part of
// the transcript before the earliest rewrite the effects declared for
// their next run (effects.Step.WillRewrite), within the transcript's
// messages (not a view's), and as Request.Repeated how far the request
// repeats the previous one, to its end or to its committed part. With no
// declaration, Committed is 0.
func TestCommittedPart(t *testing.T) {
	// shorten rewrites, after each reply, the tool result it declared at
	// its previous run, and declares the newest one; it declares nothing
	// when declare is false.
	shorten := func(declare bool) effects.Func {
		pending := -1
		return func(_ context.Context, s *effects.Step) error {
			msgs := s.Transcript()
			if pending >= 0 {
				out := s.CopyTranscript()
				out[pending].Content = "short"
				s.CommitMessages(out)
			}
			pending = len(msgs) - 1
			if declare {
				s.WillRewrite(pending)
			}
			return nil
		}
	}
	// nudge adds a view at the tail of every request from step 2 on.
	nudge := func(_ context.Context, s *effects.Step) error {
		if s.Number >= 2 {
			s.AppendMessages(defs.UserMessage("hurry"))
		}
		return nil
	}
	type sent struct{ msgs, committed, repeated int }
	for _, tc := range []struct {
		name    string
		declare bool
		want    []sent
	}{
		// [u] → [u a1 t1] → [u a1 t1' a2 t2 +hurry] → [u a1 t1' a2 t2' a3 t3 +hurry]
		{"declared", true, []sent{{1, 0, 0}, {3, 2, 1}, {6, 4, 2}, {8, 6, 4}}},
		{"not declared", false, []sent{{1, 0, 0}, {3, 0, 1}, {6, 0, 0}, {8, 0, 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trim := shorten(tc.declare)
			fn := func(p *prompt.Prompt) error {
				prompt.DefTool(p, "read", "reads", func(context.Context, struct{}) (string, error) { return "a long result", nil })
				p.Effect(effects.Always, trim, effects.InPhase(effects.AfterReply), effects.Key("shorten"))
				p.Effect(effects.Always, nudge, effects.Key("nudge"))
				p.User("go")
				return nil
			}
			call := snapshots.Reply{Calls: []snapshots.Call{{Name: "read"}}}
			res, err := runtime.Run(t.Context(), snapshots.Script(call, call, call, snapshots.Reply{Text: "done"}), fn, runtime.Config{})
			require.NoError(t, err)
			require.Len(t, res.Steps, len(tc.want))
			for i, w := range tc.want {
				req := res.Steps[i].Request()
				require.NotNil(t, req, "step %d: request", i)
				assert.Equal(t, w, sent{len(req.Messages), req.Committed, req.Repeated}, "step %d: messages, Committed, Repeated", i)
			}
		})
	}
}

// TestCommittedAfterAnotherCommit: a declaration made over a transcript
// that another effect rewrote since counts only for the messages the two
// still share.
func TestCommittedAfterAnotherCommit(t *testing.T) {
	declare := func(_ context.Context, s *effects.Step) error {
		s.WillRewrite(len(s.Transcript()) - 1)
		return nil
	}
	// rewrite replaces the first tool result before the request of step 2.
	rewrite := func(_ context.Context, s *effects.Step) error {
		if s.Number == 2 {
			out := s.CopyTranscript()
			out[2].Content = "rewritten"
			s.CommitMessages(out)
		}
		return nil
	}
	fn := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "read", "reads", func(context.Context, struct{}) (string, error) { return "a long result", nil })
		p.Effect(effects.Always, declare, effects.InPhase(effects.AfterReply), effects.Key("declare"))
		p.Effect(effects.Always, rewrite, effects.Key("rewrite"))
		p.User("go")
		return nil
	}
	call := snapshots.Reply{Calls: []snapshots.Call{{Name: "read"}}}
	res, err := runtime.Run(t.Context(), snapshots.Script(call, call, snapshots.Reply{Text: "done"}), fn, runtime.Config{})
	require.NoError(t, err)
	require.Len(t, res.Steps, 3)
	// Step 1: [u a1 t1], t1 declared. Step 2: [u a1 t1* a2 t2], t2 declared
	// over the transcript before t1 was rewritten: the two share u and a1.
	assert.Equal(t, 2, res.Steps[1].Request().Committed, "step 1: Committed")
	assert.Equal(t, 2, res.Steps[2].Request().Committed, "step 2: Committed, bounded by the rewrite")
	assert.Equal(t, 2, res.Steps[2].Request().Repeated, "step 2: Repeated, to the previous committed part")
}

// TestCommittedAfterACompaction: a declaration made over a longer
// transcript that a compaction replaced since counts only for the messages
// the two share from the start, even when it pointed past the end of the
// new one (the transcript the effect will rewrite moved).
func TestCommittedAfterACompaction(t *testing.T) {
	declare := func(_ context.Context, s *effects.Step) error {
		s.WillRewrite(len(s.Transcript()) - 1)
		return nil
	}
	compact := func(_ context.Context, s *effects.Step) error {
		if s.Number == 3 {
			s.CommitMessages([]defs.Message{s.Transcript()[0], defs.UserMessage("summary of the reads")})
		}
		return nil
	}
	fn := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "read", "reads", func(context.Context, struct{}) (string, error) { return "a long result", nil })
		p.Effect(effects.Always, declare, effects.InPhase(effects.AfterReply), effects.Key("declare"))
		p.Effect(effects.Always, compact, effects.Key("compact"))
		p.User("go")
		return nil
	}
	call := snapshots.Reply{Calls: []snapshots.Call{{Name: "read"}}}
	res, err := runtime.Run(t.Context(), snapshots.Script(call, call, call, snapshots.Reply{Text: "done"}), fn, runtime.Config{})
	require.NoError(t, err)
	require.Len(t, res.Steps, 4)
	// Step 2's declaration pointed at message 5 of 7; step 3's transcript
	// is [u summary], which shares only u with it.
	assert.Equal(t, 1, res.Steps[3].Request().Committed, "step 3: Committed, after the compaction")
}

// TestContinueSendsTheRunsRequest: with no Config.Summarizer, Step.Model
// is an effects.Continuer whose requests are the run's last request (its
// system prompt and tools) with the given messages and the instruction
// last, a summary by Purpose, with Repeated set; with a Summarizer it is a
// plain Completer.
func TestContinueSendsTheRunsRequest(t *testing.T) {
	var got string
	summarise := func(ctx context.Context, s *effects.Step) error {
		if s.Number != 1 {
			return nil
		}
		c, ok := s.Model.(effects.Continuer)
		if !ok {
			got = "no continuer"
			return nil
		}
		text, err := c.Continue(ctx, s.Transcript()[:2], "Summarise.")
		got = text
		return err
	}
	fn := func(p *prompt.Prompt) error {
		p.DefSystem("role", "You read.")
		prompt.DefTool(p, "read", "reads", func(context.Context, struct{}) (string, error) { return "a long result", nil })
		p.Effect(effects.Always, summarise, effects.Key("summarise"))
		p.User("go")
		return nil
	}
	model := snapshots.Script(snapshots.Reply{Calls: []snapshots.Call{{Name: "read"}}}, snapshots.Reply{Text: "done"}, snapshots.Summary("the summary"))
	res, err := runtime.Run(t.Context(), model, fn, runtime.Config{})
	require.NoError(t, err)
	assert.Equal(t, "the summary", got, "the continuation's answer")
	require.Len(t, res.Steps[1].Summaries, 1, "summaries at step 1")
	sum := res.Steps[1].Summaries[0].Request
	first := res.Steps[0].Request()
	assert.Equal(t, llm.PurposeSummary, sum.Purpose, "Purpose")
	assert.Equal(t, first.System, sum.System, "the run's system prompt")
	assert.Equal(t, first.Tools, sum.Tools, "the run's tools")
	require.Len(t, sum.Messages, 3, "the two messages, then the instruction")
	assert.Equal(t, "go", sum.Messages[0].Content, "the task first")
	assert.Equal(t, defs.UserMessage("Summarise."), sum.Messages[2], "the instruction last")
	assert.Equal(t, 1, sum.Repeated, "Repeated: the first request, whole")

	got = ""
	model = snapshots.Script(snapshots.Reply{Calls: []snapshots.Call{{Name: "read"}}}, snapshots.Reply{Text: "done"})
	_, err = runtime.Run(t.Context(), model, fn, runtime.Config{Summarizer: snapshots.Script()})
	require.NoError(t, err)
	assert.Equal(t, "no continuer", got, "with a Summarizer, Step.Model")
}
