package temporal_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/runtime"
	rt "github.com/reprompt/reprompt/temporal"
)

// local runs the agent in process, without Temporal: what a workflow must
// end with.
func local(t *testing.T, m llm.Model, cfg runtime.Config) *runtime.Result {
	t.Helper()
	tl := &tools{}
	res, err := runtime.Run(context.Background(), m, tl.agent, cfg)
	require.NoError(t, err)
	return res
}

func stateJSON(t *testing.T, res *runtime.Result) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, k := range []string{"stock_a", "stock_b", "stock_c", "stock_zeta", "billed"} {
		v, err := runtime.StateOf[int](res, k)
		require.NoError(t, err, k)
		out[k] = float64(v)
	}
	l, err := runtime.StateOf[[]string](res, "lookups")
	require.NoError(t, err)
	var ls []any
	for _, s := range l {
		ls = append(ls, s)
	}
	out["lookups"] = ls
	return out
}

func decodeState(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

func transcriptOf(r *rt.Result) []defs.Message {
	out := make([]defs.Message, len(r.Transcript))
	for i, m := range r.Transcript {
		out[i] = m.Message
	}
	return out
}

func newEnv(t *testing.T, agents ...rt.Agent) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(quiet())
	env := s.NewTestWorkflowEnvironment()
	require.NoError(t, rt.Register(env, agents...))
	return env
}

// runToEnd executes the workflow from in, continuing as new as often as it
// asks, each time in a fresh environment (as a new run would be), and
// returns the result and the number of runs.
func runToEnd(t *testing.T, agent rt.Agent, in rt.Input) (*rt.Result, int) {
	t.Helper()
	for runs := 1; ; runs++ {
		env := newEnv(t, agent)
		env.ExecuteWorkflow(rt.WorkflowName, in)
		require.True(t, env.IsWorkflowCompleted())
		err := env.GetWorkflowError()
		var can *workflow.ContinueAsNewError
		if errors.As(err, &can) {
			require.Equal(t, rt.WorkflowName, can.WorkflowType.Name)
			in = rt.Input{}
			require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &in))
			require.NotNil(t, in.Checkpoint)
			continue
		}
		require.NoError(t, err)
		var res rt.Result
		require.NoError(t, env.GetWorkflowResult(&res))
		return &res, runs
	}
}

// The workflow runs the agent's loop with every model and tool call an
// activity, and ends with the transcript and state of a run in process.
func TestWorkflowMatchesTheRuntime(t *testing.T) {
	want := local(t, inventoryModel(12), runtime.Config{})
	tl := &tools{}
	agent := rt.Agent{Name: "inventory", Prompt: tl.agent, Model: inventoryModel(12)}
	got, runs := runToEnd(t, agent, rt.Input{Agent: "inventory"})
	require.Equal(t, 1, runs)
	assert.Empty(t, cmp.Diff(want.Transcript, transcriptOf(got)), "transcript mismatch (-want +got)")
	assert.Empty(t, cmp.Diff(stateJSON(t, want), decodeState(t, got.State)), "state mismatch (-want +got)")
	require.Equal(t, want.Text, got.Text)
	require.Equal(t, len(want.Steps), got.Steps)
	require.Equal(t, want.Usage, got.Usage)
}

// A long run continues as new every ContinueAfter steps, carrying the
// session checkpoint, and ends as an uninterrupted run does.
func TestContinueAsNew(t *testing.T) {
	want := local(t, inventoryModel(12), runtime.Config{})
	tl := &tools{}
	agent := rt.Agent{Name: "inventory", Prompt: tl.agent, Model: inventoryModel(12), ContinueAfter: 5}
	got, runs := runToEnd(t, agent, rt.Input{Agent: "inventory"})
	require.Equal(t, 3, runs, "13 steps, 5 per run")
	assert.Empty(t, cmp.Diff(want.Transcript, transcriptOf(got)), "transcript mismatch (-want +got)")
	assert.Empty(t, cmp.Diff(stateJSON(t, want), decodeState(t, got.State)), "state mismatch (-want +got)")
	require.Equal(t, want.Usage, got.Usage)
}

// A signal adds a user message; a query returns the state and the last
// steps; an agent whose run ended waits Idle for a message.
func TestSignalAndQuery(t *testing.T) {
	tl := &tools{}
	agent := rt.Agent{Name: "inventory", Prompt: tl.agent, Model: inventoryModel(3), LastSteps: 2}
	env := newEnv(t, agent)
	query := func() *rt.Status {
		v, err := env.QueryWorkflow(rt.QueryStatus)
		require.NoError(t, err)
		var st rt.Status
		require.NoError(t, v.Get(&st))
		return &st
	}
	var first, second *rt.Status
	env.RegisterDelayedCallback(func() {
		first = query()
		env.SignalWorkflow(rt.SignalMessage, "And one more thing.")
	}, 30*time.Minute)
	env.RegisterDelayedCallback(func() {
		second = query()
		env.SignalWorkflow(rt.SignalMessage, "Thanks, bye.")
	}, time.Hour)
	env.ExecuteWorkflow(rt.WorkflowName, rt.Input{Agent: "inventory", Idle: 2 * time.Hour})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res rt.Result
	require.NoError(t, env.GetWorkflowResult(&res))

	// The run ended after 4 steps; the agent waits.
	require.NotNil(t, first)
	require.Equal(t, "inventory", first.Agent)
	require.True(t, first.Waiting)
	require.Equal(t, 4, first.Step)
	require.Len(t, first.Steps, 2, "LastSteps")
	require.Equal(t, 2, first.Steps[0].Number)
	require.Equal(t, "b: 2", first.Steps[0].ToolResults[1].Content)
	require.True(t, first.Steps[1].Done)
	st := decodeState(t, first.State)
	require.Equal(t, float64(1), st["billed"])
	require.Equal(t, float64(2), st["stock_b"])

	// The message continued the run for one step.
	require.NotNil(t, second)
	require.True(t, second.Waiting)
	require.Equal(t, 5, second.Step)
	require.Equal(t, "Done. / And one more thing.", second.Steps[1].Reply.Content)

	// The second one too; after Idle without a message the workflow
	// completed.
	require.Equal(t, "Done. / Thanks, bye.", res.Text)
	require.Equal(t, 6, res.Steps)
	var users []string
	for _, m := range res.Transcript {
		if m.Role == defs.RoleUser {
			users = append(users, m.Content)
		}
	}
	require.Equal(t, []string{"Stock up and bill the orders.", "And one more thing.", "Thanks, bye."}, users)
}

// A call of a tool that is not idempotent whose activity fails (here: it
// times out) is answered "interrupted", runs once, and changes nothing.
// (The test environment does not retry timed-out activities: the retries
// of idempotent tools are tested against a real server, in TestE2E.)
func TestToolTimeoutInterrupts(t *testing.T) {
	tl := &tools{chargeDelay: 5 * time.Second}
	agent := rt.Agent{Name: "inventory", Prompt: tl.agent, Model: inventoryModel(2),
		Tools: map[string]rt.ToolOptions{"charge": {Timeout: 200 * time.Millisecond}}}
	res, _ := runToEnd(t, agent, rt.Input{Agent: "inventory"})
	require.Equal(t, 1, tl.runs("charge"))
	results := map[string]defs.Message{}
	for _, m := range res.Transcript {
		if m.Role == defs.RoleTool {
			results[m.ToolCallID] = m.Message
		}
	}
	require.Equal(t, "a: 1", results["c0_0"].Content)
	require.True(t, results["c1_0"].IsError)
	require.Contains(t, results["c1_0"].Content, `tool call interrupted: the activity running "charge" failed`)
	st := decodeState(t, res.State)
	require.Equal(t, float64(0), st["billed"], "the interrupted charge changed nothing")
}
