package runtime_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// A runner whose run failed returns that error again from Run, Continue
// and All, as Next does: never an empty result with a nil error, and no
// model request.
func TestRunAfterAFailureReturnsTheError(t *testing.T) {
	ctx := context.Background()
	down := errors.New("down")
	var c chatter
	m := snapshots.Script(snapshots.Fail(down), snapshots.Text("never"))
	r := runtime.New(m, c.fn, runtime.Config{})
	_, err := r.Continue(ctx, "hello")
	require.ErrorIs(t, err, down)

	res, err := r.Run(ctx)
	require.ErrorIs(t, err, down, "Run again")
	require.NotNil(t, res)
	assert.Empty(t, res.Steps)
	_, err = r.Continue(ctx, "again")
	require.ErrorIs(t, err, down, "Continue after the failure")
	n := 0
	for s, err := range r.All(ctx) {
		n++
		assert.Nil(t, s)
		require.ErrorIs(t, err, down, "All after the failure")
	}
	assert.Equal(t, 1, n)
	_, err = r.Next(ctx)
	require.ErrorIs(t, err, down)
	assert.Len(t, m.Requests(), 1, "no request after the failure")
}

// A runner closed while paused for approval was abandoned: Approve refuses
// with ErrDone, and so do Next, Run and Continue, rather than a nil error
// with calls listed that can no longer be decided.
func TestClosedPausedRunnerIsDone(t *testing.T) {
	ctx := context.Background()
	fn := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "pay", "Pay.", func(context.Context, struct{}) (string, error) { return "paid", nil }, prompt.NeedsApproval())
		return nil
	}
	m := snapshots.Script(snapshots.CallTool("pay", nil), snapshots.Text("done"))
	r := runtime.New(m, fn, runtime.Config{})
	res, err := r.Continue(ctx, "pay it")
	require.NoError(t, err)
	require.Len(t, res.Awaiting, 1)
	id := res.Awaiting[0].CallID
	require.NoError(t, r.Close())

	require.ErrorIs(t, r.Approve(id), runtime.ErrDone)
	_, err = r.Next(ctx)
	require.ErrorIs(t, err, runtime.ErrDone, "Next after Close")
	_, err = r.Run(ctx)
	require.ErrorIs(t, err, runtime.ErrDone, "Run after Close")
	_, err = r.Continue(ctx, "hurry")
	require.ErrorIs(t, err, runtime.ErrDone, "Continue after Close")
	assert.Len(t, m.Requests(), 1)
}
