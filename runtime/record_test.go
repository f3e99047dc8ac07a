package runtime_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// TestNestedSubAgentRecords: a sub-agent of a sub-agent is recorded in the
// step of the sub-agent that ran it, and every request names the agent it
// is for and its step.
func TestNestedSubAgentRecords(t *testing.T) {
	inner := func(p *prompt.Prompt) error { return nil }
	outer := func(p *prompt.Prompt) error {
		p.DefAgent("inner", "Inner.", inner)
		return nil
	}
	parent := func(p *prompt.Prompt) error {
		p.DefAgent("outer", "Outer.", outer)
		p.User("go")
		return nil
	}
	m := snapshots.Script(
		snapshots.CallTool("outer", prompt.AgentArgs{Task: "o"}),
		snapshots.Text("parent done"),
	).Agent("outer",
		snapshots.CallTool("inner", prompt.AgentArgs{Task: "i"}),
		snapshots.Text("outer done"),
	).Agent("inner", snapshots.Text("inner done"))
	res := run(t, m, parent, runtime.Config{})
	require.NoError(t, m.Err())

	require.Len(t, res.Steps[0].Agents, 1)
	outerRun := res.Steps[0].Agents[0]
	assert.Equal(t, "outer", outerRun.Name)
	require.Len(t, outerRun.Steps, 2)
	require.Len(t, outerRun.Steps[0].Agents, 1)
	innerRun := outerRun.Steps[0].Agents[0]
	assert.Equal(t, "inner", innerRun.Name)
	assert.Equal(t, "outer_call_1", innerRun.CallID)
	require.Len(t, innerRun.Steps, 1)
	assert.Equal(t, "inner done", innerRun.Steps[0].Reply.Message.Content)

	type who struct {
		Agent string
		Step  int
	}
	var got []who
	for _, r := range m.Requests() {
		got = append(got, who{r.Agent, r.Step})
	}
	want := []who{{"", 0}, {"outer", 0}, {"inner", 0}, {"outer", 1}, {"", 1}}
	assert.Empty(t, cmp.Diff(want, got), "requests mismatch (-want +got)")
}

// TestFailedSubAgentIsRecorded: a sub-agent that fails keeps the steps it
// completed and its error in the parent's record.
func TestFailedSubAgentIsRecorded(t *testing.T) {
	parent := func(p *prompt.Prompt) error {
		p.DefAgent("worker", "Work.", func(p *prompt.Prompt) error {
			prompt.DefTool(p, "spin", "Spin.", func(context.Context, noArgs) (string, error) { return "again", nil })
			return nil
		})
		p.User("go")
		return nil
	}
	m := snapshots.Script(
		snapshots.CallTool("worker", prompt.AgentArgs{Task: "spin"}),
		snapshots.Text("gave up"),
	).Agent("worker", snapshots.CallTool("spin", nil), snapshots.CallTool("spin", nil))
	res := run(t, m, parent, runtime.Config{AgentMaxSteps: 2})
	require.Len(t, res.Steps[0].Agents, 1)
	a := res.Steps[0].Agents[0]
	assert.ErrorIs(t, a.Err, runtime.ErrMaxSteps)
	assert.Len(t, a.Steps, 2)
	assert.True(t, res.Steps[0].ToolResults[0].IsError)
}

// TestSubAgentTimedOutIsNotRecordedLater: a sub-agent still running at the
// tool timeout is not in the step's record, nor, when it ends during a later
// step, in that step's.
func TestSubAgentTimedOutIsNotRecordedLater(t *testing.T) {
	synctest.Test(t, testSubAgentTimedOutIsNotRecordedLater)
}

// It runs in a synctest bubble: the tool timeout and the free tool's wait
// pass in fake time, and the slow sub-agent ends during that wait for sure.
func testSubAgentTimedOutIsNotRecordedLater(t *testing.T) {
	release := make(chan struct{})
	parent := func(p *prompt.Prompt) error {
		p.DefAgent("slow", "Slow.", func(p *prompt.Prompt) error {
			<-release // its first execution lasts until the free tool runs
			return nil
		})
		prompt.DefTool(p, "free", "Free the slow one.", func(context.Context, noArgs) (string, error) {
			close(release)
			time.Sleep(20 * time.Millisecond) // the slow one ends (cancelled) and records its run
			return "freed", nil
		})
		p.User("go")
		return nil
	}
	m := snapshots.Script(
		snapshots.CallTool("slow", prompt.AgentArgs{Task: "t"}),
		snapshots.CallTool("free", nil),
		snapshots.Text("done"),
	).Agent("slow")
	res, err := runtime.Run(context.Background(), m, parent, runtime.Config{ToolTimeout: 100 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, m.Err())
	assert.True(t, res.Steps[0].ToolResults[0].IsError, "the slow sub-agent timed out")
	assert.Empty(t, res.Steps[0].Agents, "the sub-agent had not finished")
	require.False(t, res.Steps[1].ToolResults[0].IsError, res.Steps[1].ToolResults[0].Content)
	assert.Empty(t, res.Steps[1].Agents, "the late run belongs to no step")
}

// TestSummarizer: Config.Summarizer answers the completions effects ask
// for, with Purpose PurposeSummary; each is in the step's record, and its
// usage counts in the run's.
func TestSummarizer(t *testing.T) {
	fn := func(p *prompt.Prompt) error {
		p.Effect(effects.Always, func(ctx context.Context, s *effects.Step) error {
			if s.Number == 0 {
				text, err := s.Model.Complete(ctx, "sys", "summarise")
				if err != nil {
					return err
				}
				s.AppendMessages(defs.UserMessage(text))
			}
			return nil
		})
		p.User("go")
		return nil
	}
	m := snapshots.Script(snapshots.Reply{Text: "ok", Usage: &llm.Usage{InputTokens: 10, OutputTokens: 1}})
	sum := snapshots.Script(snapshots.Reply{Summary: true, Text: "the summary", Usage: &llm.Usage{InputTokens: 100, OutputTokens: 7}})
	res := run(t, m, fn, runtime.Config{Summarizer: sum})
	require.NoError(t, sum.Err())
	require.Len(t, sum.Requests(), 1)
	req := sum.Requests()[0]
	assert.Equal(t, llm.PurposeSummary, req.Purpose)
	assert.Equal(t, "sys", req.System)
	assert.Empty(t, req.Tools)
	require.Len(t, res.Steps[0].Summaries, 1)
	s := res.Steps[0].Summaries[0]
	assert.Same(t, req, s.Request)
	assert.Equal(t, "the summary", s.Reply.Message.Content)
	assert.NoError(t, s.Err)
	assert.Equal(t, llm.Usage{InputTokens: 110, OutputTokens: 8}, res.Usage)
	msgs := m.Requests()[0].Messages
	assert.Equal(t, "the summary", msgs[len(msgs)-1].Content)
}

// TestSummaryIsNotStreamedAsTheReply: Config.OnDelta receives the step's
// reply as it streams, never the text of a summary request.
func TestSummaryIsNotStreamedAsTheReply(t *testing.T) {
	fn := func(p *prompt.Prompt) error {
		p.Effect(effects.Always, func(ctx context.Context, s *effects.Step) error {
			if s.Number > 0 {
				return nil
			}
			_, err := s.Model.Complete(ctx, "sys", "summarise")
			return err
		})
		p.User("go")
		return nil
	}
	m := snapshots.Script(snapshots.Text("the reply"), snapshots.Summary("the summary"))
	var streamed string
	run(t, m, fn, runtime.Config{OnDelta: func(d llm.Delta) { streamed += d.Content }})
	assert.Equal(t, "the reply", streamed)
}
