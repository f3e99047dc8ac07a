package runtime_test

import (
	"context"
	"fmt"
	goruntime "runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/snapshots"
)

// chatPrompt is a chat prompt of the size of a small real one: a system
// part, a variable of the turn, state and an effect.
func chatPrompt(p *prompt.Prompt) error {
	n, _ := prompt.State(p, "turns", 0)
	t := p.Turn()
	p.DefSystem("role", "You are a helpful assistant. Answer briefly.")
	p.Def("turn", strconv.Itoa(t.Number))
	p.Effect(effects.On(n), func(context.Context, *effects.Step) error { return nil })
	return nil
}

// converse runs turns turns of one step each on one runner, with a memory
// store, and returns the time and allocations per step.
func converse(tb testing.TB, turns int) (time.Duration, float64) {
	replies := make([]snapshots.Reply, turns)
	questions := make([]string, turns)
	for i := range turns {
		replies[i] = snapshots.Text("answer " + strconv.Itoa(i))
		questions[i] = "question " + strconv.Itoa(i)
	}
	r := runtime.New(snapshots.Script(replies...), chatPrompt, runtime.Config{Store: session.NewMemory(), SessionID: "c", MaxSteps: turns + 1})
	var ms0, ms1 goruntime.MemStats
	goruntime.ReadMemStats(&ms0)
	start := time.Now()
	for _, q := range questions {
		if _, err := r.Continue(context.Background(), q); err != nil {
			require.NoError(tb, err)
		}
	}
	elapsed := time.Since(start)
	goruntime.ReadMemStats(&ms1)
	return elapsed / time.Duration(turns), float64(ms1.Mallocs-ms0.Mallocs) / float64(turns)
}

// BenchmarkConversation is a long conversation, one step a turn, on a
// memory store: the cost of a turn must not grow with the conversation's
// length (ns/step and allocs/step at 1000 turns within 1.3× of 10).
func BenchmarkConversation(b *testing.B) {
	for _, turns := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("turns=%d", turns), func(b *testing.B) {
			b.ReportAllocs()
			var total time.Duration
			var allocs float64
			for b.Loop() {
				d, a := converse(b, turns)
				total += d
				allocs += a
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/step")
			b.ReportMetric(allocs/float64(b.N), "allocs/step")
		})
	}
}

// The allocations of a turn do not grow with the conversation: 1000 turns
// cost at most 1.3× per turn what 10 do (allocation counts are exact
// enough to assert; times are in BenchmarkConversation).
func TestConversationPerTurnCostFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 1010 turns")
	}
	converse(t, 10) // fill the process's caches
	_, at10 := converse(t, 10)
	_, at1000 := converse(t, 1000)
	require.Positive(t, at10)
	assert.LessOrEqual(t, at1000/at10, 1.3, "allocs per turn: %.1f at 10 turns, %.1f at 1000", at10, at1000)
}
