package builtin_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/effects/builtin"
)

// benchHistory returns a task and tool turns up to n messages, with short
// results (nothing to trim).
func benchHistory(n int) []defs.Message {
	msgs := []defs.Message{user("task")}
	for i := 0; len(msgs) < n; i++ {
		id := "c" + strconv.Itoa(i)
		msgs = append(msgs, call("", "read_file:"+id), result(id, "read_file", strings.Repeat("x", 100)))
	}
	return msgs[:n]
}

// benchStep measures the per-step cost of an effect that has nothing to do,
// over a transcript of n messages that grows by one message a step, as in
// a run. A fresh effect reads the first n messages outside the timer every
// 1024 steps.
func benchStep(b *testing.B, n int, mk func() effects.Func, window int) {
	const extra = 1024
	full := benchHistory(n + extra)
	ctx := context.Background()
	var fn effects.Func
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		j := i % extra
		if j == 0 {
			b.StopTimer()
			fn = mk()
			s := effects.NewStep(0, full[:n])
			s.Budget.Window = window
			require.NoError(b, fn(ctx, s))
			b.StartTimer()
		}
		s := effects.NewStep(i, full[:n+j+1])
		s.Budget.Window = window
		require.NoError(b, fn(ctx, s))
		require.False(b, s.Mods().Committed, "the effect acted")
	}
}

func BenchmarkTrimToolResultsNoAction(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			benchStep(b, n, func() effects.Func { return builtin.TrimToolResults(builtin.TrimConfig{}) }, 0)
		})
	}
}

func BenchmarkCompactNoAction(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			benchStep(b, n, func() effects.Func { return builtin.Compact(builtin.CompactConfig{Model: &fakeModel{}}) }, 10_000_000)
		})
	}
}

// TestCompactCountsOnlyNewMessages checks the claim behind the benchmarks
// deterministically: on steps where nothing is compacted, Compact counts
// only the messages new since the previous step.
func TestCompactCountsOnlyNewMessages(t *testing.T) {
	full := benchHistory(2000)
	c := builtin.Compact(builtin.CompactConfig{Model: &fakeModel{}})
	counted := 0
	budget := effects.Budget{Window: 10_000_000, Count: func(msgs []defs.Message) int { counted += len(msgs); return count(msgs) }}
	for n := 1000; n < 2000; n++ {
		s := effects.NewStep(n, full[:n])
		s.Budget = budget
		require.NoError(t, c(context.Background(), s))
	}
	assert.LessOrEqual(t, counted, 2000, "counted %d messages over 1000 steps of 1000 to 2000 messages: the history is counted again", counted)
}
