package runtime_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/snapshots"
)

// TestNewRunOnAnExistingSession starts a new run (New, not Resume) with the
// id of a stored session, finished or stopped mid-way: its first save fails
// with a *session.ConflictError, before any of its tools runs, and the
// stored session is left as it was.
func TestNewRunOnAnExistingSession(t *testing.T) {
	ctx := context.Background()
	for _, finished := range []bool{true, false} {
		st := session.NewMemory()
		cfg := runtime.Config{Store: st, SessionID: "taken"}
		var first resumable
		if finished {
			_, err := runtime.Run(ctx, snapshots.Script(script()...), first.fn, cfg)
			require.NoError(t, err)
		} else {
			_, err := runtime.Run(ctx, snapshots.Script(script()[0], snapshots.Fail(errors.New("down"))), first.fn, cfg)
			require.Error(t, err)
		}
		before, err := st.Latest(ctx, "taken")
		require.NoError(t, err)

		var second resumable
		m := snapshots.Script(script()...)
		_, err = runtime.Run(ctx, m, second.fn, cfg)
		var se *runtime.SessionExistsError
		require.ErrorAs(t, err, &se, "finished=%t", finished)
		assert.Equal(t, "taken", se.ID)
		assert.Contains(t, err.Error(), "runtime.Resume", "the error says what to do")
		assert.Empty(t, m.Requests(), "a model request was sent before the session was found taken")
		assert.Zero(t, second.aRuns.Load()+second.bRuns.Load(), "a tool of the second run ran")
		after, err := st.Latest(ctx, "taken")
		require.NoError(t, err)
		assert.Equal(t, before, after)
	}
}

// TestResumeFinishedSession resumes a session that ended: the runner is
// done, runs nothing and saves nothing.
func TestResumeFinishedSession(t *testing.T) {
	ctx := context.Background()
	st := session.NewMemory()
	cfg := runtime.Config{Store: st, SessionID: "over"}
	var rp resumable
	_, err := runtime.Run(ctx, snapshots.Script(script()...), rp.fn, cfg)
	require.NoError(t, err)
	before, err := st.Stat(ctx, "over")
	require.NoError(t, err)
	r, err := runtime.Resume(ctx, snapshots.Script(), rp.fn, cfg)
	require.NoError(t, err)
	_, err = r.Next(ctx)
	require.ErrorIs(t, err, runtime.ErrDone)
	after, err := st.Stat(ctx, "over")
	require.NoError(t, err)
	assert.Equal(t, before.Seq, after.Seq)
}
