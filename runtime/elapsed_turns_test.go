package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/snapshots"
)

// A conversation's elapsed time (Stats.Elapsed, which MaxTime limits read)
// is the time its turns ran: the time the user took between turns is not
// counted, in process as after a Resume between the turns, which cannot
// count it.
func TestElapsedLeavesOutTheTimeBetweenTurns(t *testing.T) {
	ctx := context.Background()
	var clock time.Time
	now := func() time.Time { return clock }
	fn := func(p *prompt.Prompt) error {
		p.DefSystem("role", "Chat.")
		return nil
	}
	turn := func(r *runtime.Runner, q string) *runtime.Result {
		clock = clock.Add(time.Hour) // the user thinks
		res, err := r.Continue(ctx, q)
		require.NoError(t, err)
		return res
	}
	model := func() *snapshots.Model {
		return snapshots.Script(snapshots.Text("a"), snapshots.Text("b"))
	}

	clock = time.Unix(1000, 0)
	r := runtime.New(model(), fn, runtime.Config{Now: now})
	turn(r, "one")
	inProcess := turn(r, "two")

	clock = time.Unix(1000, 0)
	cfg := runtime.Config{Now: now, Store: session.NewMemory(), SessionID: "idle"}
	turn(runtime.New(model(), fn, cfg), "one")
	r, err := runtime.Resume(ctx, model().Skip(1), fn, cfg)
	require.NoError(t, err)
	resumed := turn(r, "two")

	assert.Less(t, inProcess.Stats.Elapsed, time.Hour, "the hour between the turns was counted")
	assert.Equal(t, resumed.Stats.Elapsed, inProcess.Stats.Elapsed)
}
