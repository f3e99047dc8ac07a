package builtin_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects/builtin"
	"github.com/reprompt/reprompt/runtime"
)

// TestCompactProperty compacts thousands of random histories (parallel
// calls, errors, split turns) under random windows, keep budgets and
// strategies, and checks that the result is a valid conversation (no tool
// call separated from its result) under the usable window, with at most one
// summary, at the start or after the task.
func TestCompactProperty(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 300
	}
	strategies := []builtin.Strategy{builtin.StrategySummarize, builtin.StrategyTruncate, builtin.StrategyWindow, builtin.StrategyHeuristic}
	seen := map[string]int{}
	defer func() {
		t.Logf("%v", seen)
		for _, k := range []string{"split", "summarize", "fallback", "trim", "truncate", "window", "heuristic", "parallel"} {
			assert.GreaterOrEqual(t, seen[k], n/100, "only %d cases of %s: the generator does not cover it", seen[k], k)
		}
	}()
	for seed := range n {
		r := rand.New(rand.NewPCG(uint64(seed), 42))
		msgs := randomHistory(r, 1+r.IntN(25))
		require.NoError(t, runtime.ValidateMessages(msgs), "seed %d: generator made an invalid history", seed)
		window := 2500 + r.IntN(20000)
		reserve := r.IntN(window / 4)
		model := &fakeModel{}
		if r.IntN(4) == 0 {
			model.reply = func(int, string, string) (string, error) { return "", errModelDown }
		}
		cfg := builtin.CompactConfig{
			Model:            model,
			Strategy:         strategies[r.IntN(len(strategies))],
			KeepRecentTokens: r.IntN(window),
			Threshold:        0.5 + r.Float64()/2,
			WindowMessages:   1 + r.IntN(20),
			TrimRecent:       1 + r.IntN(10),
			OnCompaction: func(i builtin.Info) {
				seen[string(i.Strategy)]++
				if i.SplitTurn {
					seen["split"]++
				}
				if i.Err != nil {
					seen["fallback"]++
				}
			},
		}
		for _, m := range msgs {
			if len(m.ToolCalls) > 1 {
				seen["parallel"]++
				break
			}
		}
		c := builtin.Compact(cfg)
		orig := make([]defs.Message, len(msgs))
		copy(orig, msgs)
		s := newStep(1, msgs, window)
		s.Budget.Reserve = reserve
		s.ContextTooLong = r.IntN(3) == 0
		require.NoError(t, c(context.Background(), s), "seed %d", seed)
		for i := range msgs {
			require.Equal(t, orig[i].Content, msgs[i].Content, "seed %d: message %d of the input was modified", seed, i)
			require.Len(t, msgs[i].Meta, len(orig[i].Meta), "seed %d: message %d of the input was modified", seed, i)
		}
		mods := s.Mods()
		if !mods.Committed {
			if s.ContextTooLong || count(msgs) > int(cfg.Threshold*float64(window-reserve)) {
				// Only acceptable when there was nothing to cut or trim.
				assert.LessOrEqual(t, len(msgs), 8, "seed %d: nothing committed for %d tokens, window %d-%d\n%s", seed, count(msgs), window, reserve, dump(msgs))
			}
			continue
		}
		got := mods.Transcript
		require.NoError(t, runtime.ValidateMessages(got), "seed %d: invalid after compaction:\n%s", seed, dump(got))
		tok := count(got)
		assert.LessOrEqual(t, tok, window-reserve, "seed %d (%s): %d tokens after compaction, usable window %d (before %d)\n%s", seed, cfg.Strategy, tok, window-reserve, count(msgs), dump(got))
		k, at := summaries(got)
		assert.LessOrEqual(t, k, 1, "seed %d: %d summaries, last at %d", seed, k, at)
		assert.LessOrEqual(t, at, 8, "seed %d: %d summaries, last at %d", seed, k, at)
		checkVerbatimTail(t, seed, msgs, got)
	}
}

// checkVerbatimTail checks that the messages after the summary (or after
// the head, for truncation) are the original tail, in order, changed only by
// trimming.
func checkVerbatimTail(t *testing.T, seed int, before, after []defs.Message) {
	t.Helper()
	// The head (the task: leading user and system messages) is kept as it
	// was, then comes the summary, if any, then the original tail.
	_, at := summaries(after)
	head := 0
	for head < len(after) && head < len(before) && head < 8 && (at < 0 || head < at) &&
		(before[head].Role == defs.RoleUser || before[head].Role == defs.RoleSystem) && after[head].Content == before[head].Content {
		head++
		if before[head-1].Role == defs.RoleUser {
			break // the task: one user message after the declared system messages
		}
	}
	if at >= 0 && !assert.Equal(t, head, at, "seed %d: summary at %d, after a head of %d original messages", seed, at, head) {
		return
	}
	start := head
	if at >= 0 {
		start = at + 1
	}
	tail := after[start:]
	if !assert.LessOrEqual(t, len(tail), len(before), "seed %d: more messages kept than there were", seed) {
		return
	}
	orig := before[len(before)-len(tail):]
	for i := range tail {
		a, b := tail[i], orig[i]
		if !assert.Equal(t, b.Role, a.Role, "seed %d: kept message %d is not the original", seed, i) ||
			!assert.Equal(t, b.ToolCallID, a.ToolCallID, "seed %d: kept message %d is not the original", seed, i) ||
			!assert.Len(t, a.ToolCalls, len(b.ToolCalls), "seed %d: kept message %d is not the original", seed, i) {
			return
		}
		if a.Content != b.Content && !assert.NotEmpty(t, a.Meta[builtin.MetaTrimmed], "seed %d: kept message %d changed without a trim mark", seed, i) {
			return
		}
	}
}

// TestCompactRunProperty drives one Compact and one TrimToolResults through
// random runs, step by step, as the runtime would: it checks after every
// step that the transcript is valid, under the window, and that the
// effects' incremental memory never goes wrong across their commits.
func TestCompactRunProperty(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 30
	}
	for seed := range n {
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		window := 3000 + r.IntN(10000)
		model := &fakeModel{}
		compact := builtin.Compact(builtin.CompactConfig{Model: model, Threshold: 0.7})
		trim := builtin.TrimToolResults(builtin.TrimConfig{Batch: 1 + r.IntN(4), PreserveRecent: 1 + r.IntN(5)})
		transcript := []defs.Message{user("Task " + strconv.Itoa(seed))}
		id := 0
		for step := range 60 {
			s := newStep(step, transcript, window)
			full := count(transcript)
			require.NoError(t, compact(context.Background(), s))
			// The incremental count must decide as a count from scratch.
			over := full > int(0.7*float64(window))
			require.Equal(t, over, s.Mods().Committed, "seed %d step %d: %d tokens, limit %d, committed %v", seed, step, full, int(0.7*float64(window)), s.Mods().Committed)
			if m := s.Mods(); m.Committed {
				transcript = m.Transcript
				tok := count(transcript)
				require.LessOrEqual(t, tok, window, "seed %d step %d: %d tokens, window %d", seed, step, tok, window)
			}
			// The reply and its results.
			a := defs.AssistantMessage("step " + strconv.Itoa(step))
			var res []defs.Message
			for range r.IntN(4) {
				id++
				cid := "c" + strconv.Itoa(id)
				a.ToolCalls = append(a.ToolCalls, defs.ToolCall{ID: cid, Name: "read_file", Arguments: []byte(`{"path":"x.go"}`)})
				res = append(res, defs.ToolResult{CallID: cid, Name: "read_file", Content: string(make([]byte, r.IntN(2500))), IsError: r.IntN(8) == 0}.Message())
			}
			transcript = append(append(transcript, a), res...)
			s = newStep(step, transcript, window)
			require.NoError(t, trim(context.Background(), s))
			if m := s.Mods(); m.Committed {
				transcript = m.Transcript
			}
			require.NoError(t, runtime.ValidateMessages(transcript), "seed %d step %d:\n%s", seed, step, dump(transcript))
			k, _ := summaries(transcript)
			require.LessOrEqual(t, k, 1, "seed %d step %d: %d summaries", seed, step, k)
			if len(a.ToolCalls) == 0 && r.IntN(2) == 0 {
				transcript = append(transcript, user("more"))
			}
		}
	}
}

// FuzzCompact drives TestCompactProperty's checks from fuzzed parameters.
func FuzzCompact(f *testing.F) {
	f.Add(uint64(1), uint16(3000), uint16(500), uint8(0), uint8(10), true)
	f.Add(uint64(7), uint16(800), uint16(0), uint8(2), uint8(3), false)
	strategies := []builtin.Strategy{builtin.StrategySummarize, builtin.StrategyTruncate, builtin.StrategyWindow, builtin.StrategyHeuristic}
	f.Fuzz(func(t *testing.T, seed uint64, window, keep uint16, strategy, turns uint8, tooLong bool) {
		r := rand.New(rand.NewPCG(seed, 1))
		msgs := randomHistory(r, int(turns%40))
		w := 2500 + int(window)
		c := builtin.Compact(builtin.CompactConfig{Model: &fakeModel{}, Strategy: strategies[int(strategy)%len(strategies)], KeepRecentTokens: int(keep)})
		s := newStep(1, msgs, w)
		s.ContextTooLong = tooLong
		require.NoError(t, c(context.Background(), s))
		if m := s.Mods(); m.Committed {
			require.NoError(t, runtime.ValidateMessages(m.Transcript), "invalid:\n%s", dump(m.Transcript))
			n := count(m.Transcript)
			require.LessOrEqual(t, n, w, "%d tokens, window %d", n, w)
		}
	})
}
