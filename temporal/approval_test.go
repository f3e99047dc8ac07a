package temporal_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	rt "github.com/reprompt/reprompt/temporal"
)

// payer is the inventory agent with a tool that needs approval: "pay"
// adds to "paid" (a key per order, so that parallel calls compose).
func payer(tl *tools) prompt.Func {
	return func(p *prompt.Prompt) error {
		if err := tl.agent(p); err != nil {
			return err
		}
		paid, setPaid := prompt.State(p, "paid", map[string]int{})
		p.DefData("paid", paid)
		prompt.DefTool(p, "pay", "Pay an order.", func(ctx context.Context, a chargeArgs) (string, error) {
			tl.count("pay")
			setPaid.Update(ctx, func(m map[string]int) map[string]int {
				out := map[string]int{a.Order: a.Amount}
				for k, v := range m {
					out[k] = v
				}
				return out
			})
			return fmt.Sprintf("paid %s", a.Order), nil
		}, prompt.NeedsApproval())
		return nil
	}
}

// payModel pays two orders and stocks an item in one reply (the two pays
// pause the step, the stock runs at once), then pays a third order alone,
// then stops.
func payModel() *stepModel {
	return &stepModel{final: "Done.", replies: []defs.Message{
		calls(0, call(0, 0, "pay", chargeArgs{Order: "o1", Amount: 10}), call(0, 1, "stock", stockArgs{Item: "a", N: 2}), call(0, 2, "pay", chargeArgs{Order: "o2", Amount: 20})),
		calls(1, call(1, 0, "pay", chargeArgs{Order: "o3", Amount: 30})),
	}}
}

// decisions of the approval tests, by call id.
var payDecisions = map[string]rt.Decision{
	"c0_0": {CallID: "c0_0", Approve: true},
	"c0_2": {CallID: "c0_2", Reason: "Not o2."},
	"c1_0": {CallID: "c1_0", Approve: true},
}

// localPay runs payer in process, deciding with Approve and Deny. When
// messages are given, the prompt function declares them from the first
// pause on, as a workflow adds the messages sent while it is paused.
func localPay(t *testing.T, messages ...string) (*runtime.Result, map[string]any, *tools) {
	t.Helper()
	tl := &tools{}
	paused := false
	fn := func(p *prompt.Prompt) error {
		if err := payer(tl)(p); err != nil {
			return err
		}
		for _, m := range messages {
			if paused {
				p.User(m)
			}
		}
		return nil
	}
	r := runtime.New(payModel(), fn, runtime.Config{})
	ctx := context.Background()
	res, err := r.Run(ctx)
	require.NoError(t, err)
	for len(res.Awaiting) > 0 {
		paused = true
		for _, a := range res.Awaiting {
			d := payDecisions[a.CallID]
			if d.Approve {
				require.NoError(t, r.Approve(a.CallID))
			} else {
				require.NoError(t, r.Deny(a.CallID, d.Reason))
			}
		}
		res, err = r.Run(ctx)
		require.NoError(t, err)
	}
	st, err := r.Prompt().Store().MarshalJSON()
	require.NoError(t, err)
	return res, decodeState(t, st), tl
}

func queryStatus(t *testing.T, env *testsuite.TestWorkflowEnvironment) *rt.Status {
	t.Helper()
	v, err := env.QueryWorkflow(rt.QueryStatus)
	require.NoError(t, err)
	var st rt.Status
	require.NoError(t, v.Get(&st))
	return &st
}

// update sends an UpdateDecide and returns whether it was rejected (by the
// validator), and the error it was rejected or failed with.
func update(env *testsuite.TestWorkflowEnvironment, id string, d rt.Decision) (rejected *bool, err *error) {
	rejected, err = new(bool), new(error)
	env.UpdateWorkflow(rt.UpdateDecide, id, &testsuite.TestUpdateCallback{
		OnAccept:   func() {},
		OnReject:   func(e error) { *rejected, *err = true, e },
		OnComplete: func(_ any, e error) { *err = e },
	}, d)
	return rejected, err
}

// A run pausing on two parallel calls, one approved and one denied by
// updates, then on a third, approved, ends as the same run in process; the
// query shows the calls awaiting a decision; updates naming an unknown or
// an already decided call are rejected by the validator, and the workflow
// goes on.
func TestDecideByUpdate(t *testing.T) {
	want, wantState, wantTools := localPay(t)

	tl := &tools{}
	env := newEnv(t, rt.Agent{Name: "payer", Prompt: payer(tl), Model: payModel()})
	var paused, half *rt.Status
	var unknownRejected, decidedRejected, ok1, ok2 *bool
	var unknownErr, decidedErr, err1, err2 *error
	env.RegisterDelayedCallback(func() {
		paused = queryStatus(t, env)
		unknownRejected, unknownErr = update(env, "u0", rt.Decision{CallID: "c9_9", Approve: true})
		ok1, err1 = update(env, "u1", payDecisions["c0_0"])
	}, time.Minute)
	env.RegisterDelayedCallback(func() {
		half = queryStatus(t, env)
		decidedRejected, decidedErr = update(env, "u2", rt.Decision{CallID: "c0_0"})
		ok2, err2 = update(env, "u3", payDecisions["c0_2"])
	}, 2*time.Minute)
	env.RegisterDelayedCallback(func() {
		st := queryStatus(t, env)
		require.Equal(t, []string{"c1_0"}, ids(st.Awaiting))
		update(env, "u4", payDecisions["c1_0"])
	}, 3*time.Minute)
	env.ExecuteWorkflow(rt.WorkflowName, rt.Input{Agent: "payer"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var got rt.Result
	require.NoError(t, env.GetWorkflowResult(&got))

	// Paused: the query lists both pays, with their arguments; the stock
	// call of the same reply ran.
	require.NotNil(t, paused)
	require.Equal(t, []rt.Approval{
		{Step: 0, CallID: "c0_0", Tool: "pay", Arguments: []byte(`{"order":"o1","amount":10}`)},
		{Step: 0, CallID: "c0_2", Tool: "pay", Arguments: []byte(`{"order":"o2","amount":20}`)},
	}, paused.Awaiting)
	require.Equal(t, []string{"c0_0", "c0_2"}, paused.Steps[0].Awaiting)
	require.Equal(t, "a: 2", paused.Steps[0].ToolResults[0].Content)
	require.Equal(t, float64(2), decodeState(t, paused.State)["stock_a"])
	require.False(t, paused.Waiting)

	// The unknown call was rejected, naming what awaits a decision.
	require.True(t, *unknownRejected)
	requireApprovalError(t, *unknownErr, `approve "c9_9": no tool call with this id awaits a decision (awaiting a decision: c0_0, c0_2)`)
	require.False(t, *ok1)
	require.NoError(t, *err1)

	// One decided: the other still awaits; deciding the first again is
	// rejected.
	require.Equal(t, []string{"c0_2"}, ids(half.Awaiting))
	require.True(t, *decidedRejected)
	requireApprovalError(t, *decidedErr, `deny "c0_0": the tool call was already decided (approved) (awaiting a decision: c0_2)`)
	require.False(t, *ok2)
	require.NoError(t, *err2)

	// The run ended as in process: o1 and o3 paid once each, o2 denied.
	assert.Empty(t, cmp.Diff(want.Transcript, transcriptOf(&got)), "transcript mismatch (-want +got)")
	assert.Empty(t, cmp.Diff(wantState, decodeState(t, got.State)), "state mismatch (-want +got)")
	require.Equal(t, want.Text, got.Text)
	require.Equal(t, want.Usage, got.Usage)
	require.Equal(t, 2, wantTools.runs("pay"))
	require.Equal(t, 2, tl.runs("pay"))
	denied := results(got.Transcript)["c0_2"]
	require.True(t, denied.IsError)
	require.Equal(t, "Not o2.", denied.Content)
}

func ids(as []rt.Approval) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.CallID)
	}
	return out
}

func results(msgs []rt.Message) map[string]defs.Message {
	out := map[string]defs.Message{}
	for _, m := range msgs {
		if m.Role == defs.RoleTool {
			out[m.ToolCallID] = m.Message
		}
	}
	return out
}

// requireApprovalError checks that err is the application error of a
// refused decision, with the runtime's message.
func requireApprovalError(t *testing.T, err error, msg string) {
	t.Helper()
	ae, ok := errors.AsType[*temporal.ApplicationError](err)
	require.True(t, ok, "%T: %v", err, err)
	require.Equal(t, rt.ApprovalErrorType, ae.Type())
	require.Equal(t, msg, ae.Message())
}

// A pause outlives continue-as-new: the checkpoint carries the calls
// awaiting a decision, the next run waits for them, and the run ends as in
// process.
func TestDecideAcrossContinueAsNew(t *testing.T) {
	want, wantState, _ := localPay(t)
	tl := &tools{}
	agent := rt.Agent{Name: "payer", Prompt: payer(tl), Model: payModel(), ContinueAfter: 1}
	in := rt.Input{Agent: "payer"}
	var carried [][]session.Approval
	for runs := 1; ; runs++ {
		require.Less(t, runs, 10)
		env := newEnv(t, agent)
		env.RegisterDelayedCallback(func() {
			for _, a := range queryStatus(t, env).Awaiting {
				update(env, "u-"+a.CallID, payDecisions[a.CallID])
			}
		}, time.Minute)
		env.ExecuteWorkflow(rt.WorkflowName, in)
		require.True(t, env.IsWorkflowCompleted())
		err := env.GetWorkflowError()
		if can, ok := errors.AsType[*workflow.ContinueAsNewError](err); ok {
			in = rt.Input{}
			require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &in))
			cp, err := in.Checkpoint.Decode()
			require.NoError(t, err)
			if cp.Pending != nil {
				carried = append(carried, cp.Pending.Approvals)
			}
			continue
		}
		require.NoError(t, err)
		var got rt.Result
		require.NoError(t, env.GetWorkflowResult(&got))
		assert.Empty(t, cmp.Diff(want.Transcript, transcriptOf(&got)), "transcript mismatch (-want +got)")
		assert.Empty(t, cmp.Diff(wantState, decodeState(t, got.State)), "state mismatch (-want +got)")
		break
	}
	// Both pauses were carried across continue-as-new, undecided.
	require.Equal(t, [][]session.Approval{{{CallID: "c0_0"}, {CallID: "c0_2"}}, {{CallID: "c1_0"}}}, carried)
	require.Equal(t, 2, tl.runs("pay"))
}

// A sub-agent running as a child workflow cannot wait for a decision: as
// in process, it fails, and the parent's call gets the error result.
func TestSubAgentCannotPause(t *testing.T) {
	sub := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "pay", "Pay.", func(ctx context.Context, a chargeArgs) (string, error) {
			return "paid", nil
		}, prompt.NeedsApproval())
		return nil
	}
	parent := func(p *prompt.Prompt) error {
		p.DefAgent("payer", "Pay things.", sub)
		p.User("Pay o1.")
		return nil
	}
	m := func() byAgent {
		return byAgent{
			"":      {final: "Done.", replies: []defs.Message{calls(0, defs.ToolCall{Name: "payer", Arguments: task("pay o1")})}},
			"payer": {final: "Paid.", replies: []defs.Message{calls(0, call(0, 0, "pay", chargeArgs{Order: "o1"}))}},
		}
	}
	want, err := runtime.Run(context.Background(), m(), parent, runtime.Config{})
	require.NoError(t, err)
	env := newEnv(t, rt.Agent{Name: "boss", Prompt: parent, Model: m()}, rt.Agent{Name: "payer", Prompt: sub, Model: m()})
	env.ExecuteWorkflow(rt.WorkflowName, rt.Input{Agent: "boss"})
	require.NoError(t, env.GetWorkflowError())
	var got rt.Result
	require.NoError(t, env.GetWorkflowResult(&got))
	wantRes := results(wrap(want.Transcript))["c0_0"]
	gotRes := results(got.Transcript)["c0_0"]
	require.True(t, gotRes.IsError)
	require.Contains(t, gotRes.Content, `call c0_0 of tool "pay" needs approval, which sub-agent "payer" cannot wait for`)
	require.Equal(t, wantRes, gotRes, "the error result of the call in process")
	assert.Empty(t, cmp.Diff(want.Transcript, transcriptOf(&got)), "transcript mismatch (-want +got)")
}

func wrap(msgs []defs.Message) []rt.Message {
	out := make([]rt.Message, len(msgs))
	for i, m := range msgs {
		out[i] = rt.Message{Message: m}
	}
	return out
}

// A message sent while the run is paused is kept, and added at the step
// after the paused one, as in process; the step records show the pause and
// the decisions that completed it.
func TestMessageDuringPause(t *testing.T) {
	want, wantState, _ := localPay(t, "Also pay o4.")

	tl := &tools{}
	env := newEnv(t, rt.Agent{Name: "payer", Prompt: payer(tl), Model: payModel()})
	var during, after *rt.Status
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(rt.SignalMessage, "Also pay o4.")
	}, time.Minute)
	env.RegisterDelayedCallback(func() {
		during = queryStatus(t, env)
		update(env, "u1", payDecisions["c0_0"])
		update(env, "u2", payDecisions["c0_2"])
	}, 2*time.Minute)
	env.RegisterDelayedCallback(func() {
		after = queryStatus(t, env)
		update(env, "u3", payDecisions["c1_0"])
	}, 3*time.Minute)
	env.ExecuteWorkflow(rt.WorkflowName, rt.Input{Agent: "payer"})
	require.NoError(t, env.GetWorkflowError())
	var got rt.Result
	require.NoError(t, env.GetWorkflowResult(&got))

	require.Equal(t, 1, during.Inbox, "kept while paused")
	require.Equal(t, []string{"c0_0", "c0_2"}, ids(during.Awaiting))
	require.Equal(t, 0, after.Inbox, "added at step 1")
	require.Equal(t, []string{"c1_0"}, ids(after.Awaiting))
	require.Len(t, after.Steps, 3)
	require.Equal(t, []string{"c0_0", "c0_2"}, after.Steps[0].Awaiting)
	require.Equal(t, 0, after.Steps[1].Number, "the record completing step 0")
	require.Equal(t, []rt.Decision{{CallID: "c0_0", Approve: true}, {CallID: "c0_2", Reason: "Not o2."}}, after.Steps[1].Decisions)
	require.Equal(t, []string{"c1_0"}, after.Steps[2].Awaiting)

	assert.Empty(t, cmp.Diff(want.Transcript, transcriptOf(&got)), "transcript mismatch (-want +got)")
	assert.Empty(t, cmp.Diff(wantState, decodeState(t, got.State)), "state mismatch (-want +got)")
	var users []string
	for _, m := range got.Transcript {
		if m.Role == defs.RoleUser {
			users = append(users, m.Content)
		}
	}
	require.Equal(t, []string{"Stock up and bill the orders.", "Also pay o4."}, users)
}
