package runtime_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
