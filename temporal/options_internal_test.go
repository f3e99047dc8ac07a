package temporal

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/reprompt/reprompt/defs"
)

// The activity options of a tool's calls: an idempotent tool is retried,
// any other runs at most once, unless ToolOptions say otherwise.
func TestToolActivityOptions(t *testing.T) {
	custom := &temporal.RetryPolicy{MaximumAttempts: 7}
	x := &executor{agent: &Agent{Tools: map[string]ToolOptions{
		"custom": {Timeout: time.Minute, Heartbeat: time.Second, Retry: custom},
	}}}
	o := x.options("lookup", &defs.Tool{Idempotent: true})
	require.Equal(t, int32(DefaultAttempts), o.RetryPolicy.MaximumAttempts)
	require.Equal(t, DefaultToolTimeout, o.StartToCloseTimeout)
	require.Equal(t, DefaultHeartbeat, o.HeartbeatTimeout)

	o = x.options("pay", &defs.Tool{})
	require.Equal(t, int32(1), o.RetryPolicy.MaximumAttempts)

	o = x.options("custom", &defs.Tool{})
	require.Same(t, custom, o.RetryPolicy)
	require.Equal(t, time.Minute, o.StartToCloseTimeout)
	require.Equal(t, time.Second, o.HeartbeatTimeout)

	x.agent.Config.ToolTimeout = 3 * time.Second
	require.Equal(t, 3*time.Second, x.options("pay", &defs.Tool{}).StartToCloseTimeout)
}

func TestRegisterRefusesBadAgents(t *testing.T) {
	for _, tc := range []struct {
		agents []Agent
		want   string
	}{
		{[]Agent{{}}, "agent 0 has no name"},
		{[]Agent{{Name: "a"}}, `agent "a" has no prompt function`},
	} {
		_, err := newRegistry(tc.agents)
		require.ErrorContains(t, err, tc.want)
	}
}
