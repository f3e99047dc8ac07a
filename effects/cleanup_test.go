package effects_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/effects"
)

// Issue 8 item 11: a cleanup that panics before its effect's next run is
// an *effects.Error naming the effect, not a panic.
func TestCleanupPanicBeforeNextRunIsAnEffectError(t *testing.T) {
	var m effects.Manager
	body := func() {
		register(&m, effects.Always, func(_ context.Context, s *effects.Step) error {
			s.Cleanup(func() { panic("cleanup broke") })
			return nil
		}, effects.Key("watcher"))
	}
	execute(t, &m, 0, body)
	m.Begin()
	body()
	require.NoError(t, m.End())
	var ran []effects.Ran
	var err error
	require.NotPanics(t, func() {
		ran, err = m.Run(context.Background(), effects.BeforeCall, effects.NewStep(1, nil))
	})
	assert.Empty(t, ran)
	var ee *effects.Error
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, "key:watcher", ee.ID)
	assert.True(t, ee.Cleanup)
	assert.Equal(t, 1, ee.Step)
	assert.True(t, strings.HasPrefix(ee.Site, "cleanup_test.go:"), "Site %q", ee.Site)
	assert.True(t, strings.HasPrefix(ee.PanicSite, "cleanup_test.go:"), "PanicSite %q", ee.PanicSite)
	// Error has no field for the panic value: its text is carried in Err.
	assert.EqualError(t, ee.Err, "panic: cleanup broke")
}

// Close and End run cleanups effect by effect in registration order,
// keyed or not (keys live in a map), run them all when one panics, and
// report each panic as an *effects.Error.
func TestCleanupsRunInRegistrationOrder(t *testing.T) {
	var m effects.Manager
	var log []string
	keys := []string{"k9", "k3", "k7", "k1", "k5", "k0", "k8", "k2", "k6", "k4"}
	effect := func(name string, panics bool) effects.Func {
		return func(_ context.Context, s *effects.Step) error {
			s.Cleanup(func() {
				log = append(log, name)
				if panics {
					panic(name + " broke")
				}
			})
			return nil
		}
	}
	body := func(withKeys bool) {
		for i, k := range keys {
			if withKeys {
				register(&m, effects.Once, effect(k, k == "k1"), effects.Key(k))
			}
			if i == 4 {
				register(&m, effects.Once, effect("unkeyed", false))
			}
		}
	}
	exec := func(withKeys bool) error {
		m.Begin()
		body(withKeys)
		if err := m.End(); err != nil {
			return err
		}
		_, err := m.Run(context.Background(), effects.BeforeCall, effects.NewStep(0, nil))
		return err
	}
	// One call line for every execution, so that the effects' call sites
	// (with their callers) stay the same.
	var errs []error
	var logs [][]string
	for _, withKeys := range []bool{true, false, true} {
		errs = append(errs, exec(withKeys))
		logs = append(logs, log)
		log = nil
	}
	require.NoError(t, errs[0])
	require.NoError(t, errs[2])
	// Keyed effects that are no longer registered: cleaned up at End.
	err := errs[1]
	log = logs[1]
	var ee *effects.Error
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, "key:k1", ee.ID)
	assert.True(t, ee.Cleanup)
	want := slicesWithout(keys, "")
	assert.Empty(t, cmp.Diff(want, log), "End cleanup order mismatch (-want +got)")

	// All of them at Close.
	log = nil
	err = m.Close()
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, "key:k1", ee.ID)
	want = append(append(slicesWithout(keys[:5], ""), "unkeyed"), keys[5:]...)
	assert.Empty(t, cmp.Diff(want, log), "Close cleanup order mismatch (-want +got)")
	// A second Close runs nothing.
	log = nil
	assert.NoError(t, m.Close())
	assert.Empty(t, log)
}

func slicesWithout(s []string, x string) []string {
	var out []string
	for _, v := range s {
		if v != x {
			out = append(out, v)
		}
	}
	return out
}

func TestCloseJoinsEveryPanickingCleanup(t *testing.T) {
	var m effects.Manager
	execute(t, &m, 0, func() {
		for i := range 3 {
			register(&m, effects.Once, func(_ context.Context, s *effects.Step) error {
				s.Cleanup(func() { panic(fmt.Sprintf("cleanup %d", i)) })
				return nil
			}, effects.Key(fmt.Sprint(i)))
		}
	})
	var err error
	require.NotPanics(t, func() { err = m.Close() })
	joined, ok := err.(interface{ Unwrap() []error })
	require.True(t, ok, "Close = %v, want the errors joined", err)
	var ids []string
	for _, e := range joined.Unwrap() {
		var ee *effects.Error
		require.ErrorAs(t, e, &ee)
		assert.True(t, ee.Cleanup, "%s: Cleanup", ee.ID)
		ids = append(ids, ee.ID)
	}
	assert.Empty(t, cmp.Diff([]string{"key:0", "key:1", "key:2"}, ids), "effects whose cleanup panicked mismatch (-want +got)")
}
