package effects_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/internal/callsite"
)

// Issue 8 item 10: effects registered in a loop are matched by position, so
// when the loop's list changes, one would silently get another's memory.
// The number of unkeyed effects a call site registers must not change.
func TestLoopOfEffectsChangingLengthIsAHookOrderError(t *testing.T) {
	tests := []struct {
		name         string
		lists        [][]string
		trailing     bool // an unconditional effect after the loop
		prev, now, n int  // the counts reported, at execution n
	}{
		{"shrinks", [][]string{{"a", "b"}, {"b"}}, false, 2, 1, 1},
		{"shrinks before another effect", [][]string{{"a", "b"}, {"b"}}, true, 2, 1, 1},
		{"grows", [][]string{{"b"}, {"a", "b"}}, false, 1, 2, 1},
		{"grows later", [][]string{{"a", "b"}, {"a", "b"}, {"a", "b", "c"}}, true, 2, 3, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m effects.Manager
			var loopSite string
			body := func(items []string) {
				for _, item := range items {
					loopSite = callsite.Caller(0).String()
					register(&m, effects.On(item), nop)
				}
				if tt.trailing {
					register(&m, effects.Always, nop)
				}
			}
			run := func(items []string) error {
				m.Begin()
				body(items)
				return m.End()
			}
			var err error
			for i, items := range tt.lists[:tt.n+1] {
				err = run(items) // one call line: the sites' callers are the same
				if i < tt.n {
					require.NoError(t, err, "execution %d", i)
				}
			}
			var he *effects.HookOrderError
			require.ErrorAs(t, err, &he)
			site := lineAfter(t, loopSite)
			assert.Equal(t, site, he.Now)
			assert.Equal(t, he.Now, he.Was)
			assert.Equal(t, 0, he.Index)
			assert.Equal(t, tt.prev, he.PrevCount)
			assert.Equal(t, tt.now, he.Count)
			// The message is the contract here: it names the user's call
			// site and the fix, effects.Key.
			assert.Contains(t, err.Error(), site)
			assert.Contains(t, err.Error(), "effects.Key")
		})
	}
}

// The keyed loop the error suggests keeps each item's memory, and a loop
// of constant length or a lone conditional effect is no error.
func TestLoopsThatKeepTheirMemory(t *testing.T) {
	t.Run("keyed", func(t *testing.T) {
		var m effects.Manager
		var runs []string
		for step, items := range [][]string{{"a", "b"}, {"b"}, {"b", "c"}} {
			execute(t, &m, step, func() {
				for _, item := range items {
					register(&m, effects.On(item), func(context.Context, *effects.Step) error {
						runs = append(runs, fmt.Sprintf("%d %s", step, item))
						return nil
					}, effects.Key(item))
				}
			})
		}
		// "b" ran once: its memory is its own.
		assert.Empty(t, cmp.Diff([]string{"0 a", "0 b", "2 c"}, runs), "runs mismatch (-want +got)")
	})
	t.Run("constant length", func(t *testing.T) {
		var m effects.Manager
		var runs int
		for step, items := range [][]string{{"a", "b"}, {"a", "c"}, {"a", "c"}} {
			execute(t, &m, step, func() {
				for _, item := range items {
					register(&m, effects.On(item), func(context.Context, *effects.Step) error { runs++; return nil })
				}
			})
		}
		assert.Equal(t, 3, runs) // a, b at 0; c at 1
	})
	t.Run("conditional at the end", func(t *testing.T) {
		var m effects.Manager
		for step, cond := range []bool{true, false, true} {
			execute(t, &m, step, func() {
				register(&m, effects.Always, nop)
				if cond {
					register(&m, effects.Once, nop)
				}
			})
		}
	})
}
