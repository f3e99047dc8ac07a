package builtin_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/effects/builtin"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// TestMaxTimeInARun: the run's wall time reaches the limits effect. It runs
// in a synctest bubble, where a tool that takes 25 s takes no real time and
// the elapsed times are exact: with MaxTime one minute, the third request
// (at 50 s, past DefaultWarn of the limit) carries the wrap-up message, and
// the run ends before the fourth (at 75 s).
func TestMaxTimeInARun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		agent := func(p *prompt.Prompt) error {
			prompt.DefTool(p, "build", "Build.", func(context.Context, struct{}) (string, error) {
				time.Sleep(25 * time.Second)
				return "built", nil
			})
			p.Effect(effects.Always, builtin.Limits(builtin.LimitsConfig{MaxTime: time.Minute}), effects.Key("limits"))
			p.User("Build it until it works.")
			return nil
		}
		var replies []snapshots.Reply
		for range 5 {
			replies = append(replies, snapshots.CallTool("build", nil))
		}
		m := snapshots.Script(replies...)
		_, err := runtime.Run(context.Background(), m, agent, runtime.Config{})
		var le *builtin.LimitError
		require.ErrorAs(t, err, &le, "Run = %v, want a *builtin.LimitError for the time", err)
		require.ErrorIs(t, err, builtin.ErrTimeLimit, "Run = %v, want a *builtin.LimitError for the time", err)
		assert.Empty(t, cmp.Diff(builtin.LimitError{Limit: builtin.LimitTime, Used: 75, Max: 60}, *le), "LimitError mismatch (-want +got)")
		reqs := m.Requests()
		require.Len(t, reqs, 3, "%d requests, want 3", len(reqs))
		// What the model reads is the contract here: the limit and its use.
		for i, want := range []string{"", "", "time: 50s of 1m0s"} {
			msgs := reqs[i].Messages
			last := msgs[len(msgs)-1]
			assert.Equal(t, want != "", strings.Contains(last.Content, "time: "), "request %d ends with %q, want a wrap-up saying %q (none if empty)", i, last.Content, want)
			assert.Contains(t, last.Content, want, "request %d ends with %q, want a wrap-up saying %q (none if empty)", i, last.Content, want)
		}
	})
}
