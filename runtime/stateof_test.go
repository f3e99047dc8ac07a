package runtime_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
	"github.com/reprompt/reprompt/state"
)

// Issue 8 item 15: the typed state a run left is read from its Result.
func TestStateOfResult(t *testing.T) {
	m := snapshots.Script(snapshots.CallTool("add", amountArgs{N: 2}), snapshots.Text("done"))
	res, err := runtime.Run(context.Background(), m, counter(nil), runtime.Config{})
	require.NoError(t, err)

	count, err := runtime.StateOf[int](res, "count")
	require.NoError(t, err)
	assert.Equal(t, 2, count)

	_, err = runtime.StateOf[string](res, "count")
	var te *state.TypeError
	assert.ErrorAs(t, err, &te)

	_, err = runtime.StateOf[int](res, "missing")
	var nf *state.NotFoundError
	assert.ErrorAs(t, err, &nf)

	_, err = runtime.StateOf[int](nil, "count")
	assert.ErrorAs(t, err, &nf)
	_, err = runtime.StateOf[int](&runtime.Result{}, "count")
	assert.ErrorAs(t, err, &nf)
}
