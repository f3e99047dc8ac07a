package snapshots_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/effects/builtin"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

type pathArgs struct {
	Path string `json:"path"`
}

// reader reads files of size characters under the default context
// management for window tokens, which compacts by summarising.
func reader(window, size int) prompt.Func {
	cfg := builtin.Defaults(builtin.Profile{Window: window, OutputReserve: window / 6})
	return func(p *prompt.Prompt) error {
		p.DefSystem("role", "You read files.")
		prompt.DefTool(p, "read_file", "Read a file.", func(ctx context.Context, a pathArgs) (string, error) {
			return a.Path + ": " + strings.Repeat("x", size), nil
		})
		cfg.Register(p)
		p.User("Read the files.")
		return nil
	}
}

func reads(n int) []snapshots.Reply {
	var rs []snapshots.Reply
	for i := range n {
		rs = append(rs, snapshots.CallTool("read_file", pathArgs{Path: "f" + string(rune('a'+i%26)) + ".go"}))
	}
	return append(rs, snapshots.Text("Done."))
}

// TestCompactionTakesNoStepReply is the bug report's case: a 40-reply
// script ended after 38 steps without an error, because each summary a
// compaction asked for took the next scripted reply.
func TestCompactionTakesNoStepReply(t *testing.T) {
	m := snapshots.Script(reads(39)...)
	res, err := runtime.Run(context.Background(), m, reader(6000, 1500), runtime.Config{Window: 6000, Reserve: 1000})
	require.NoError(t, err)
	assert.Equal(t, 40, len(res.Steps), "one step per scripted reply")
	assert.Equal(t, "Done.", res.Text)
	assert.Zero(t, m.Remaining())
	// The script has no summaries: each summary request failed (and
	// compaction fell back on a summary made by rule), which Err reports.
	assert.ErrorIs(t, m.Err(), snapshots.ErrNoSummary)
}

// TestCompactionSummaries: with scripted summaries, compaction's requests
// take them, and the golden file shows each summary request (the run's
// request continued, under Defaults) and answer at its step.
func TestCompactionSummaries(t *testing.T) {
	m := snapshots.Script(reads(12)...)
	// Defaults compacts at 0.8 of the usable window here (a window this
	// small holds less than builtin.DefaultsMinHistory): twice in twelve
	// reads of 700 characters, the second time updating the summary.
	for i := range 2 {
		m.Append(snapshots.Summary(fmt.Sprintf("Summary %d: the files read so far are each x repeated.", i+1)))
	}
	res := snapshots.Run(t, reader(1500, 700), m, snapshots.Config(runtime.Config{Window: 1500, Reserve: 250}))
	require.NotNil(t, res)
	assert.Equal(t, 13, len(res.Steps), "one step per scripted reply")
	assertFormatStep(t, res.Steps)
	var sums []*runtime.Summary
	for _, s := range res.Steps {
		sums = append(sums, s.Summaries...)
	}
	require.Len(t, sums, 2)
	for i, s := range sums {
		assert.Equal(t, llm.PurposeSummary, s.Request.Purpose)
		// Defaults sends the summary as the run's own request continued
		// (builtin.CompactConfig.Continue): its system prompt and tools,
		// then the summariser's instructions as the last message.
		assert.Equal(t, "<role>\nYou read files.\n</role>", s.Request.System)
		require.NotEmpty(t, s.Request.Tools, "summary %d: the run's tools", i)
		last := s.Request.Messages[len(s.Request.Messages)-1]
		assert.True(t, strings.HasPrefix(last.Content, builtin.DefaultSummaryPrompt), "summary %d: the instructions, last: %q", i, last.Content)
		assert.True(t, strings.HasPrefix(s.Reply.Message.Content, fmt.Sprintf("Summary %d:", i+1)), "summaries are answered in order")
	}
	require.NoError(t, m.Err())
	assert.Zero(t, m.Remaining())
}
