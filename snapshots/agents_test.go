package snapshots_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

type noteArgs struct {
	Text string `json:"text"`
}

// researcher is a sub-agent with state and a tool of its own.
func researcher(p *prompt.Prompt) error {
	notes, setNotes := prompt.State(p, "notes", 0)
	p.DefSystem("role", "You research: "+p.Input())
	p.Def("notes", fmt.Sprint(notes))
	prompt.DefTool(p, "note", "Take a note.", func(ctx context.Context, a noteArgs) (string, error) {
		setNotes.Update(ctx, func(n int) int { return n + 1 })
		return "noted: " + a.Text, nil
	})
	return nil
}

// delegating is a parent that delegates to a researcher and a writer.
func delegating(p *prompt.Prompt) error {
	p.DefSystem("role", "You delegate.")
	p.DefAgent("researcher", "Research a question.", researcher)
	p.DefAgent("writer", "Write the answer.", func(p *prompt.Prompt) error {
		p.DefSystem("role", "You write.")
		return nil
	})
	p.User("What is the answer?")
	return nil
}

// parentScript and researcherScript script delegating: the researcher
// takes a note, then answers; the parent answers with its result.
func parentScript() []snapshots.Reply {
	return []snapshots.Reply{
		snapshots.CallTool("researcher", prompt.AgentArgs{Task: "find the answer"}),
		snapshots.Text("The answer is 42."),
	}
}

func researcherScript() []snapshots.Reply {
	return []snapshots.Reply{
		snapshots.CallTool("note", noteArgs{Text: "it is 42"}),
		snapshots.Text("42, see my note."),
	}
}

// TestSubAgentSteps: the sub-agent's steps are in the parent's step record
// under the call that ran it, its requests say which agent they are for,
// and the golden file nests its steps under the tool call.
func TestSubAgentSteps(t *testing.T) {
	m := snapshots.Script(parentScript()...).Agent("researcher", researcherScript()...)
	res := snapshots.Run(t, delegating, m)
	require.NotNil(t, res)
	require.Len(t, res.Steps, 2)

	agents := res.Steps[0].Agents
	require.Len(t, agents, 1, "the sub-agent run by step 0's call")
	a := agents[0]
	assert.Equal(t, "call_1", a.CallID)
	assert.Equal(t, "researcher", a.Name)
	assert.NoError(t, a.Err)
	require.Len(t, a.Steps, 2)
	assert.Equal(t, map[string]any{"notes": 1}, a.Steps[0].State)
	assert.Equal(t, "researcher_call_1", a.Steps[0].Reply.Message.ToolCalls[0].ID)
	assert.Empty(t, res.Steps[1].Agents)
	assertFormatStep(t, res.Steps)

	type who struct {
		Agent string
		Step  int
	}
	var got []who
	for _, r := range m.Requests() {
		got = append(got, who{r.Agent, r.Step})
	}
	want := []who{{"", 0}, {"researcher", 0}, {"researcher", 1}, {"", 1}}
	assert.Empty(t, cmp.Diff(want, got), "requests' agents mismatch (-want +got)")
	assert.Zero(t, m.Remaining())
	assert.NoError(t, m.Err())
}

// TestSubAgentWithoutScript: with agent scripts, a sub-agent that has none
// fails with an error naming it and its step, and takes none of the
// parent's replies; the snapshot test fails although the parent went on.
func TestSubAgentWithoutScript(t *testing.T) {
	m := snapshots.Script(
		snapshots.CallTool("writer", prompt.AgentArgs{Task: "write it"}),
		snapshots.Text("I could not get it written."),
	).Agent("researcher", researcherScript()...)
	setEnv(t, "1", "") // the golden file is written to a temporary directory
	var res *runtime.Result
	f := runFake(t, "TestSubAgentWithoutScript", func(tb testing.TB) {
		res = snapshots.Run(tb, delegating, m, snapshots.Dir(t.TempDir()))
	})
	require.NotNil(t, res)

	var se *snapshots.ScriptError
	require.ErrorAs(t, m.Err(), &se)
	want := snapshots.ScriptError{
		Request: 2, Agent: "writer", Step: 0, Purpose: llm.PurposeStep, Err: snapshots.ErrNoAgentScript,
		Hint: `the model has scripts for "researcher" only; give this one its replies with Script(...).Agent("writer", ...)`,
	}
	assert.Empty(t, cmp.Diff(want, *se, cmpopts.EquateErrors()), "ScriptError mismatch (-want +got)")

	// The parent's replies were its own: its second one ended the run.
	assert.Equal(t, "I could not get it written.", res.Text)
	assert.Equal(t, 2, m.Remaining(), "the researcher's two replies are left, and only they")
	r := res.Steps[0].ToolResults[0]
	assert.True(t, r.IsError)
	assert.Contains(t, r.Content, `sub-agent "writer"`)
	require.Len(t, res.Steps[0].Agents, 1)
	assert.ErrorIs(t, res.Steps[0].Agents[0].Err, snapshots.ErrNoAgentScript)

	// What the test reports is the contract here: the whole error.
	assert.Contains(t, f.failed(), `scripted model: no agent script for request 2 (agent "writer", step 0): the model has scripts for "researcher" only; give this one its replies with Script(...).Agent("writer", ...)`, "the test must fail though the run did not")
}

// TestForgottenSubAgentReply is the bug report's case: the researcher's
// script lacks its last reply. It must not take the parent's, and the error
// names the agent and the step.
func TestForgottenSubAgentReply(t *testing.T) {
	m := snapshots.Script(parentScript()...).Agent("researcher", researcherScript()[:1]...)
	res, err := runtime.Run(context.Background(), m, delegating, runtime.Config{})
	require.NoError(t, err, "the sub-agent's failure is an error result for the parent")
	assert.Equal(t, "The answer is 42.", res.Text, "the parent kept its own replies")

	var se *snapshots.ScriptError
	require.ErrorAs(t, m.Err(), &se)
	assert.ErrorIs(t, se, snapshots.ErrScriptExhausted)
	assert.Equal(t, "researcher", se.Agent)
	assert.Equal(t, 1, se.Step)
	// The message is the contract here: how a ScriptError prints.
	assert.Equal(t, `scripted model: no reply left for request 3 (agent "researcher", step 1): the script of agent "researcher" has 1 replies`, se.Error())
}

// TestSingleScriptKeepsWorking: without agent scripts, one list answers
// every request in order, as before.
func TestSingleScriptKeepsWorking(t *testing.T) {
	m := snapshots.Script(
		snapshots.CallTool("researcher", prompt.AgentArgs{Task: "find the answer"}),
		snapshots.CallTool("note", noteArgs{Text: "it is 42"}),
		snapshots.Text("42, see my note."),
		snapshots.Text("The answer is 42."),
	)
	res, err := runtime.Run(context.Background(), m, delegating, runtime.Config{})
	require.NoError(t, err)
	require.NoError(t, m.Err())
	assert.Equal(t, "The answer is 42.", res.Text)
	require.Len(t, res.Steps[0].Agents, 1)
	assert.Equal(t, "call_2", res.Steps[0].Agents[0].Steps[0].Reply.Message.ToolCalls[0].ID, "ids count across the one script")
}

// TestSingleScriptExhaustedNamesSubAgents: the bug report's case with one
// script: the forgotten sub-agent reply makes the parent run out, and the
// error says which sub-agents took replies from the script.
func TestSingleScriptExhaustedNamesSubAgents(t *testing.T) {
	m := snapshots.Script(
		snapshots.CallTool("researcher", prompt.AgentArgs{Task: "find the answer"}),
		snapshots.CallTool("note", noteArgs{Text: "it is 42"}),
		// forgotten: the researcher's answer
		snapshots.Text("The answer is 42."),
	)
	_, err := runtime.Run(context.Background(), m, delegating, runtime.Config{})
	var se *snapshots.ScriptError
	require.ErrorAs(t, err, &se)
	want := snapshots.ScriptError{
		Request: 4, Agent: "", Step: 1, Purpose: llm.PurposeStep, Err: snapshots.ErrScriptExhausted,
		Hint: `the script has 3 replies, and sub-agents took some of them ("researcher" 2): give each sub-agent its own with Agent(name, ...)`,
	}
	assert.Empty(t, cmp.Diff(want, *se, cmpopts.EquateErrors()), "ScriptError mismatch (-want +got)")
}

// TestAgentScriptsRunInParallel: two sub-agents called at once each answer
// from their own script, whatever order their requests arrive in.
func TestAgentScriptsRunInParallel(t *testing.T) {
	for range 20 {
		m := snapshots.Script(
			snapshots.CallTools(
				snapshots.Call{Name: "researcher", Args: prompt.AgentArgs{Task: "find"}},
				snapshots.Call{Name: "writer", Args: prompt.AgentArgs{Task: "write"}},
			),
			snapshots.Text("done"),
		).Agent("researcher", researcherScript()...).Agent("writer", snapshots.Text("written"))
		res, err := runtime.Run(context.Background(), m, delegating, runtime.Config{})
		require.NoError(t, err)
		require.NoError(t, m.Err())
		var got []string
		for _, r := range res.Steps[0].ToolResults {
			got = append(got, r.Name+": "+r.Content)
		}
		require.Equal(t, []string{"researcher: 42, see my note.", "writer: written"}, got)
		require.Len(t, res.Steps[0].Agents, 2)
		assert.Equal(t, "researcher", res.Steps[0].Agents[0].Name)
		assert.Equal(t, "writer", res.Steps[0].Agents[1].Name)
	}
}

// summarising is a prompt whose effect asks for a summary at step 1, as
// compaction does.
func summarising(p *prompt.Prompt) error {
	p.DefSystem("role", "You count.")
	prompt.DefTool(p, "add", "Add.", func(ctx context.Context, a addArgs) (string, error) { return "added", nil })
	p.Effect(effects.Always, func(ctx context.Context, s *effects.Step) error {
		if s.Number != 1 {
			return nil
		}
		text, err := s.Model.Complete(ctx, "Summarise.", "the conversation so far")
		if err != nil {
			text = "(no summary: " + err.Error() + ")"
		}
		s.AppendMessages(defs.UserMessage("summary: " + text))
		return nil
	})
	p.User("go")
	return nil
}

// TestSummariesHaveTheirOwnList: summary requests take Summary replies,
// step requests the others, and both are in the step record and the
// golden file.
func TestSummariesHaveTheirOwnList(t *testing.T) {
	m := snapshots.Script(
		snapshots.CallTool("add", addArgs{N: 1}),
		snapshots.Summary("One was added."),
		snapshots.CallTool("add", addArgs{N: 2}),
		snapshots.Text("Done."),
	)
	res := snapshots.Run(t, summarising, m)
	require.NotNil(t, res)
	require.Len(t, res.Steps, 3, "every step reply was used by a step")
	require.Len(t, res.Steps[1].Summaries, 1)
	sum := res.Steps[1].Summaries[0]
	assert.Equal(t, llm.PurposeSummary, sum.Request.Purpose)
	assert.Equal(t, 1, sum.Request.Step)
	assert.Equal(t, "Summarise.", sum.Request.System)
	require.NotNil(t, sum.Reply)
	assert.Equal(t, "One was added.", sum.Reply.Message.Content)
	assert.Empty(t, res.Steps[0].Summaries)
	assert.Empty(t, res.Steps[2].Summaries)
	assert.Zero(t, m.Remaining())
}

// TestMissingSummaryFailsTheTest: a summary request without a scripted
// summary takes no step reply, and fails the snapshot test though the
// prompt went on without it.
func TestMissingSummaryFailsTheTest(t *testing.T) {
	m := snapshots.Script(
		snapshots.CallTool("add", addArgs{N: 1}),
		snapshots.CallTool("add", addArgs{N: 2}),
		snapshots.Text("Done."),
	)
	setEnv(t, "1", "") // the golden file is written to a temporary directory
	var res *runtime.Result
	f := runFake(t, "TestMissingSummaryFailsTheTest", func(tb testing.TB) {
		res = snapshots.Run(tb, summarising, m, snapshots.Dir(t.TempDir()))
	})
	require.NotNil(t, res)
	assert.Len(t, res.Steps, 3, "the summary request took no step reply")
	require.Len(t, res.Steps[1].Summaries, 1)
	assert.ErrorIs(t, res.Steps[1].Summaries[0].Err, snapshots.ErrNoSummary)
	assert.Contains(t, f.failed(), `scripted model: no summary left for request 2 (the run's prompt, summary request at step 1): the script has 0 summaries; summaries are scripted with snapshots.Summary(...)`)
}

// TestSummaryWithToolCalls: a Summary entry cannot call tools.
func TestSummaryWithToolCalls(t *testing.T) {
	m := snapshots.Script(snapshots.Reply{Summary: true, Calls: []snapshots.Call{{Name: "add"}}})
	_, err := m.Generate(context.Background(), &llm.Request{Purpose: llm.PurposeSummary})
	assert.ErrorIs(t, err, snapshots.ErrBadSummary)
	assert.True(t, errors.Is(m.Err(), snapshots.ErrBadSummary))
}

// TestSeparateSummarizer: Config.Summarizer answers the summary requests;
// the run's model answers only steps.
func TestSeparateSummarizer(t *testing.T) {
	m := snapshots.Script(
		snapshots.CallTool("add", addArgs{N: 1}),
		snapshots.CallTool("add", addArgs{N: 2}),
		snapshots.Text("Done."),
	)
	summarizer := snapshots.Script(snapshots.Summary("From the summariser."))
	res, err := runtime.Run(context.Background(), m, summarising, runtime.Config{Summarizer: summarizer})
	require.NoError(t, err)
	require.NoError(t, m.Err())
	require.NoError(t, summarizer.Err())
	assert.Len(t, m.Requests(), 3)
	require.Len(t, summarizer.Requests(), 1)
	assert.Equal(t, llm.PurposeSummary, summarizer.Requests()[0].Purpose)
	assert.Equal(t, "From the summariser.", res.Steps[1].Summaries[0].Reply.Message.Content)
	msgs := m.Requests()[1].Messages
	assert.Equal(t, "summary: From the summariser.", msgs[len(msgs)-1].Content, "the summary reached the request")
}
