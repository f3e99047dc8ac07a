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
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	rt "github.com/reprompt/reprompt/temporal"
)

// decideAgent is the agent of TestE2EDecide: it continues as new every 2
// steps, so that the second pause is in the second run.
func decideAgent(tl *tools) rt.Agent {
	return rt.Agent{Name: "payer", Prompt: payer(tl), Model: payModel(), ContinueAfter: 2}
}

// Against a real server: the query lists the calls awaiting a decision,
// Decide answers them with updates, a decision on an unknown or decided
// call is refused with the runtime's typed error and changes nothing, and
// the run ends as in process.
func TestE2EDecide(t *testing.T) {
	c := dial(t, serverAddr(t))
	queue := fmt.Sprintf("reprompt-e2e-decide-%d", time.Now().UnixNano())
	w := worker.New(c, queue, worker.Options{})
	tl := &tools{}
	require.NoError(t, rt.Register(w, decideAgent(tl)))
	require.NoError(t, w.Start())
	defer w.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id := "e2e-" + queue
	first, err := rt.Start(ctx, c, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, rt.Input{Agent: "payer"})
	require.NoError(t, err)
	awaiting := func(want ...string) {
		t.Helper()
		var st *rt.Status
		require.Eventually(t, func() bool {
			st, err = rt.Query(ctx, c, id)
			return err == nil && len(st.Awaiting) == len(want)
		}, time.Minute, 20*time.Millisecond, "the run did not pause")
		require.Equal(t, want, ids(st.Awaiting))
	}

	awaiting("c0_0", "c0_2")
	err = rt.Decide(ctx, c, id, "c9_9", true, "")
	ae, ok := errors.AsType[*runtime.ApprovalError](err)
	require.True(t, ok, "%T: %v", err, err)
	require.ErrorIs(t, err, runtime.ErrUnknownCall)
	require.Equal(t, &runtime.ApprovalError{Op: "approve", CallID: "c9_9", Awaiting: []string{"c0_0", "c0_2"}, Err: runtime.ErrUnknownCall}, ae)
	require.NoError(t, rt.Decide(ctx, c, id, "c0_0", true, ""))
	err = rt.Decide(ctx, c, id, "c0_0", false, "changed my mind")
	require.ErrorIs(t, err, runtime.ErrAlreadyDecided)
	ae, _ = errors.AsType[*runtime.ApprovalError](err)
	require.Equal(t, session.Approved, ae.Decided)
	awaiting("c0_2")
	require.NoError(t, rt.Decide(ctx, c, id, "c0_2", false, "Not o2."))

	awaiting("c1_0") // in the second run
	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	require.NoError(t, err)
	second := desc.WorkflowExecutionInfo.Execution.RunId
	require.NotEqual(t, first.GetRunID(), second)
	require.NoError(t, rt.Decide(ctx, c, id, "c1_0", true, ""))

	var got rt.Result
	require.NoError(t, c.GetWorkflow(ctx, id, "").Get(ctx, &got))
	want, wantState, _ := localPay(t)
	assert.Empty(t, cmp.Diff(want.Transcript, transcriptOf(&got)), "transcript mismatch (-want +got)")
	assert.Empty(t, cmp.Diff(wantState, decodeState(t, got.State)), "state mismatch (-want +got)")
	require.Equal(t, 2, tl.runs("pay"), "o1 and o3 paid once each")
	recordHistory(t, c, id, first.GetRunID(), "e2e_decide_first_run")
	recordHistory(t, c, id, second, "e2e_decide_second_run")
}
