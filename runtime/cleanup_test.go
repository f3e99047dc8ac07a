package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// Issue 8 item 11: a cleanup that panics when the run ends is an error of
// Run naming the effect, not a panic escaping Run.
func TestCleanupPanicAtEndOfRunIsAnError(t *testing.T) {
	fn := func(p *prompt.Prompt) error {
		p.Effect(effects.Once, func(_ context.Context, s *effects.Step) error {
			s.Cleanup(func() { panic("cleanup broke") })
			return nil
		}, effects.Key("watcher"))
		return counter(nil)(p)
	}
	var res *runtime.Result
	var err error
	require.NotPanics(t, func() {
		res, err = runtime.Run(context.Background(), snapshots.Script(snapshots.Text("done")), fn, runtime.Config{})
	})
	var ee *effects.Error
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, "key:watcher", ee.ID)
	assert.True(t, ee.Cleanup)
	assert.True(t, strings.HasPrefix(ee.PanicSite, "cleanup_test.go:"), "PanicSite %q", ee.PanicSite)
	require.NotNil(t, res)
	assert.Equal(t, "done", res.Text) // the steps are still there
}

// A cleanup that panics before its effect runs again is an *effects.Error
// naming the effect, not a *runtime.PanicError.
func TestCleanupPanicBeforeNextRunFailsTheStep(t *testing.T) {
	fn := func(p *prompt.Prompt) error {
		p.Effect(effects.Always, func(_ context.Context, s *effects.Step) error {
			s.Cleanup(func() { panic("cleanup broke") })
			return nil
		})
		return counter(nil)(p)
	}
	m := snapshots.Script(snapshots.CallTool("add", amountArgs{N: 1}), snapshots.Text("done"))
	_, err := runtime.Run(context.Background(), m, fn, runtime.Config{})
	var pe *runtime.PanicError
	assert.False(t, errors.As(err, &pe), "error is a *runtime.PanicError: %v", err)
	var ee *effects.Error
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, "#0", ee.ID)
	assert.Equal(t, 1, ee.Step)
	assert.True(t, ee.Cleanup)
	assert.True(t, strings.HasPrefix(ee.Site, "cleanup_test.go:"), "Site %q", ee.Site)
	assert.Len(t, m.Requests(), 1)
}

// A run stopped early (breaking out of All) keeps its cleanups until
// Close, which runs them once.
func TestCloseRunsPendingCleanupsOnce(t *testing.T) {
	var log []string
	fn := func(p *prompt.Prompt) error {
		p.Effect(effects.Once, func(_ context.Context, s *effects.Step) error {
			s.Cleanup(func() { log = append(log, "first") })
			return nil
		})
		p.Effect(effects.Once, func(_ context.Context, s *effects.Step) error {
			s.Cleanup(func() { log = append(log, "second") })
			return nil
		}, effects.Key("k"))
		return counter(nil)(p)
	}
	m := snapshots.Script(snapshots.CallTool("add", amountArgs{N: 1}), snapshots.Text("done"))
	r := runtime.New(m, fn, runtime.Config{})
	for _, err := range r.All(context.Background()) {
		require.NoError(t, err)
		break
	}
	assert.Empty(t, log, "cleanups ran before Close")
	require.NoError(t, r.Close())
	assert.Empty(t, cmp.Diff([]string{"first", "second"}, log), "cleanups mismatch (-want +got)")
	require.NoError(t, r.Close())
	assert.Len(t, log, 2, "the second Close ran cleanups again")
	_, err := r.Next(context.Background())
	assert.ErrorIs(t, err, runtime.ErrDone)
}
