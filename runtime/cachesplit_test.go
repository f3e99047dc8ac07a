package runtime_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/snapshots"
)

// TestCacheWritesOnTheBill: the provider's cache reads and writes reach
// the step records, the run's stats, its checkpoints (so that a resumed
// run keeps them) and its cost, each part of the input at its price.
func TestCacheWritesOnTheBill(t *testing.T) {
	fn := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "noop", "does nothing", func(context.Context, struct{}) (string, error) { return "ok", nil })
		p.User("go")
		return nil
	}
	// The first request writes its prefix to the cache, partly for an
	// hour; the second reads it and writes what it added.
	u0 := llm.Usage{InputTokens: 1000, OutputTokens: 10, CacheWriteTokens: 900, CacheWrite1hTokens: 300}
	u1 := llm.Usage{InputTokens: 1100, OutputTokens: 20, CachedTokens: 900, CacheWriteTokens: 150}
	model := snapshots.Script(
		snapshots.Reply{Calls: []snapshots.Call{{Name: "noop"}}, Usage: &u0},
		snapshots.Reply{Text: "done", Usage: &u1},
	)
	const mtok = 1e6 // $1 a token, so that the cost reads as tokens
	pricing := llm.Pricing{Input: mtok, Output: 2 * mtok, CacheRead: 0.1, CacheWrite: 1.25, CacheWrite1h: 2}
	st := session.NewMemory()
	res, err := runtime.Run(t.Context(), model, fn, runtime.Config{Store: st, SessionID: "rec", Pricing: pricing})
	require.NoError(t, err)
	require.Len(t, res.Steps, 2)

	want := []session.Usage{
		{InputTokens: 1000, OutputTokens: 10, CacheWriteTokens: 900, CacheWrite1hTokens: 300},
		{InputTokens: 1100, OutputTokens: 20, CachedTokens: 900, CacheWriteTokens: 150},
	}
	for i := range want {
		rec := mustRecord(t, st, i+1)
		assert.Empty(t, cmp.Diff(want[i], rec.Usage), "step %d: record's usage mismatch (-want +got)", i)
	}
	assert.Equal(t, 100, mustRecord(t, st, 1).Usage.Uncached(), "step 0: uncached input")
	assert.Equal(t, 50, mustRecord(t, st, 2).Usage.Uncached(), "step 1: uncached input")
	b, err := json.Marshal(mustRecord(t, st, 1).Usage)
	require.NoError(t, err)
	assert.JSONEq(t, `{"input":1000,"output":10,"cache_write":900,"cache_write_1h":300}`, string(b), "the record's usage as a checkpoint keeps it")

	// 100 uncached + 600 written for 5 minutes at 1.25 + 300 for an hour
	// at 2, 10 output at 2; then 50 uncached + 900 read at 0.1 + 150
	// written at 1.25, 20 output at 2.
	cost := (100 + 750 + 600 + 20) + (50 + 90 + 187.5 + 40)
	assert.InDelta(t, cost, res.Stats.Cost, 1e-6, "the run's cost")
	assert.Equal(t, 1050, res.Stats.CacheWriteTokens, "the run's cache writes")
	assert.Equal(t, 300, res.Stats.CacheWrite1hTokens, "the run's cache writes for an hour")
	assert.Equal(t, 1050, res.Usage.CacheWriteTokens, "the run's usage: cache writes")

	cp, err := st.Latest(t.Context(), "rec")
	require.NoError(t, err)
	assert.Equal(t, session.Stats{Steps: 2, InputTokens: 2100, OutputTokens: 30, CachedTokens: 900, CacheWriteTokens: 1050, CacheWrite1hTokens: 300, Cost: res.Stats.Cost},
		session.Stats{Steps: cp.Stats.Steps, InputTokens: cp.Stats.InputTokens, OutputTokens: cp.Stats.OutputTokens, CachedTokens: cp.Stats.CachedTokens,
			CacheWriteTokens: cp.Stats.CacheWriteTokens, CacheWrite1hTokens: cp.Stats.CacheWrite1hTokens, Cost: cp.Stats.Cost},
		"the last checkpoint's stats")
}
