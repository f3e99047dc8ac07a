package runtime_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/snapshots"
)

// Result.Usage sums every model call of a conversation, also after Resume:
// the reasoning tokens of the turns before the resume are kept with the
// other totals, so a resumed conversation reports what an uninterrupted
// one does.
func TestUsageAfterResumeKeepsReasoningTokens(t *testing.T) {
	ctx := context.Background()
	fn := func(p *prompt.Prompt) error {
		p.DefSystem("role", "Think.")
		return nil
	}
	reply := func(text string) snapshots.Reply {
		r := snapshots.Text(text)
		r.Usage = &llm.Usage{InputTokens: 10, OutputTokens: 7, ReasoningTokens: 5}
		return r
	}
	cfg := runtime.Config{Store: session.NewMemory(), SessionID: "think"}

	inProcess := runtime.New(snapshots.Script(reply("a"), reply("b")), fn, runtime.Config{})
	_, err := inProcess.Continue(ctx, "one")
	require.NoError(t, err)
	want, err := inProcess.Continue(ctx, "two")
	require.NoError(t, err)
	assert.Equal(t, llm.Usage{InputTokens: 20, OutputTokens: 14, ReasoningTokens: 10}, want.Usage)

	_, err = runtime.New(snapshots.Script(reply("a")), fn, cfg).Continue(ctx, "one")
	require.NoError(t, err)
	r, err := runtime.Resume(ctx, snapshots.Script(reply("b")), fn, cfg)
	require.NoError(t, err)
	got, err := r.Continue(ctx, "two")
	require.NoError(t, err)
	assert.Equal(t, want.Usage, got.Usage, "the usage of the conversation after Resume")
}
