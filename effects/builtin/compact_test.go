package builtin_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects/builtin"
	"github.com/reprompt/reprompt/state"
)

// conversation returns a task and n turns, each a user request, an
// assistant message calling read_file and write_file in parallel, their
// results (size characters each) and an answer.
func conversation(n, size int) []defs.Message {
	msgs := []defs.Message{user("Task: fix the parser.")}
	for i := range n {
		s := strconv.Itoa(i)
		msgs = append(msgs,
			user("Step "+s+": look at file "+s),
			call("Reading "+s, "read_file:r"+s, "write_file:w"+s),
			result("r"+s, "read_file", strings.Repeat("r", size)),
			result("w"+s, "write_file", "ok"),
			assistant("Done with "+s+"."),
		)
	}
	return msgs
}

func TestCompactBelowThresholdDoesNothing(t *testing.T) {
	model := &fakeModel{}
	c := builtin.Compact(builtin.CompactConfig{Model: model})
	msgs := conversation(3, 100)
	got := committed(t, c, newStep(1, msgs, 100_000))
	require.Nil(t, got, "compacted below the threshold:\n%s", dump(got))
	// No window known: nothing either.
	got = committed(t, c, newStep(1, conversation(100, 1000), 0))
	require.Nil(t, got, "compacted with no window")
	require.Empty(t, model.Calls(), "the model was called")
}

func TestCompactTrimsFirst(t *testing.T) {
	var infos []builtin.Info
	model := &fakeModel{}
	c := builtin.Compact(builtin.CompactConfig{Model: model, OnCompaction: func(i builtin.Info) { infos = append(infos, i) }})
	msgs := conversation(8, 2000) // ≈ 8×(500+…) tokens
	window := count(msgs) * 100 / 90
	got := committed(t, c, newStep(1, msgs, window))
	require.NotNil(t, got, "no commit")
	require.Empty(t, model.Calls(), "summarised although trimming was enough")
	require.Len(t, got, len(msgs), "messages %d → %d", len(msgs), len(got))
	require.Len(t, infos, 1, "info = %+v", infos)
	require.Equal(t, builtin.StrategyTrim, infos[0].Strategy, "info = %+v", infos)
	require.NotZero(t, infos[0].Trimmed, "info = %+v", infos)
	require.Less(t, infos[0].TokensAfter, infos[0].TokensBefore, "info = %+v", infos)
	// The last messages are not trimmed.
	for _, m := range got[len(got)-6:] {
		require.Equal(t, "", m.Meta[builtin.MetaTrimmed], "a recent message was trimmed")
	}
}

func TestCompactSummarises(t *testing.T) {
	var info builtin.Info
	model := &fakeModel{summary: "The user wants the parser fixed. Files r0..r9 were read."}
	c := builtin.Compact(builtin.CompactConfig{Model: model, OnCompaction: func(i builtin.Info) { info = i }})
	msgs := conversation(20, 400)
	window := count(msgs) / 2
	got := committed(t, c, newStep(5, msgs, window))
	require.NotNil(t, got, "no commit")
	calls := model.Calls()
	require.Len(t, calls, 1, "model called %d times", len(calls))
	assert.Equal(t, builtin.DefaultSummaryPrompt, calls[0].system, "summariser system prompt")
	assert.Contains(t, calls[0].user, "Summarise the conversation below.", "summariser input")
	assert.Contains(t, calls[0].user, "→ call read_file {\"path\":\"r", "summariser input")
	// Layout: task, summary, kept messages verbatim.
	require.Equal(t, msgs[0].Content, got[0].Content, "the task is not first")
	n, at := summaries(got)
	require.Equal(t, 1, n, "%d summaries, at %d", n, at)
	require.Equal(t, 1, at, "%d summaries, at %d", n, at)
	sm := got[1]
	require.Equal(t, defs.RoleUser, sm.Role, "summary message %+v", sm)
	require.Equal(t, "1", sm.Meta[builtin.MetaSummary], "summary message %+v", sm)
	kept := got[2:]
	tail := msgs[len(msgs)-len(kept):]
	for i := range kept {
		require.Equal(t, tail[i].Content, kept[i].Content, "kept message %d differs from the original", i)
		require.Equal(t, tail[i].ToolCallID, kept[i].ToolCallID, "kept message %d differs from the original", i)
	}
	assert.LessOrEqual(t, count(got), window*8/10, "after compaction %d tokens, threshold %d", count(got), window*8/10)
	assert.Equal(t, len(msgs), info.Summarized+info.Kept+1, "info = %+v: Summarized+Kept+1", info)
	assert.Equal(t, len(kept), info.Kept, "info = %+v: Kept", info)
	assert.Equal(t, len(got), info.MessagesAfter, "info = %+v: MessagesAfter", info)
	assert.False(t, info.Incremental, "info = %+v: Incremental", info)
	assert.Equal(t, len(model.summary), info.SummaryLen, "info = %+v: SummaryLen", info)
	assert.Equal(t, builtin.StrategySummarize, info.Strategy, "info = %+v: Strategy", info)
	assert.Equal(t, 5, info.Step, "info = %+v: Step", info)
	// The summarised files: every summarised read and write.
	summarised := msgs[1 : 1+info.Summarized]
	for _, m := range summarised {
		for _, tc := range m.ToolCalls {
			key := builtin.MetaReadFiles
			if tc.Name == "write_file" {
				key = builtin.MetaModifiedFiles
			}
			assert.Contains(t, sm.Meta[key], tc.ID+".go", "%s missing from %s: %q", tc.ID, key, sm.Meta[key])
		}
	}
}

func TestCompactSummaryFormat(t *testing.T) {
	got := builtin.SummaryContent("Did things.", []string{"a.go", "b.go"}, []string{"c.go"})
	want := "<summary>\n" +
		"This summary replaces the earlier part of the conversation; the messages after it continue from where it ends.\n" +
		"\n" +
		"Did things.\n" +
		"\n" +
		"<read-files>\na.go\nb.go\n</read-files>\n" +
		"<modified-files>\nc.go\n</modified-files>\n" +
		"</summary>"
	assert.Equal(t, want, got, "mismatch:\n got %q\nwant %q", got, want)
	got = builtin.SummaryContent("Only text.", nil, nil)
	assert.Equal(t, "<summary>\nThis summary replaces the earlier part of the conversation; the messages after it continue from where it ends.\n\nOnly text.\n</summary>", got, "no files: %q", got)
	got = builtin.SummaryContent("X", nil, []string{"m.go"})
	assert.True(t, strings.HasSuffix(got, "X\n\n<modified-files>\nm.go\n</modified-files>\n</summary>"), "modified only: %q", got)
}

func TestCompactSummaryMessageGolden(t *testing.T) {
	model := &fakeModel{summary: "Goal: fix the parser."}
	c := builtin.Compact(builtin.CompactConfig{Model: model, KeepRecentTokens: 25})
	msgs := []defs.Message{
		user("Fix the parser."),
		call("", "read_file:a", "read_file:b"),
		result("a", "read_file", strings.Repeat("a", 3000)),
		result("b", "read_file", strings.Repeat("b", 3000)),
		call("", "edit_file:e"),
		result("e", "edit_file", "ok"),
		assistant("Edited a."),
		user("Now run the tests."),
		call("", "run:t"),
		result("t", "run", "PASS"),
	}
	s := newStep(3, msgs, 600)
	s.ContextTooLong = true
	got := committed(t, c, s)
	require.NotNil(t, got, "no commit")
	want := "<summary>\n" +
		"This summary replaces the earlier part of the conversation; the messages after it continue from where it ends.\n\n" +
		"Goal: fix the parser.\n\n" +
		"<read-files>\nb.go\n</read-files>\n" +
		"<modified-files>\ne.go\n</modified-files>\n" +
		"</summary>"
	want = strings.Replace(want, "b.go\n", "a.go\nb.go\n", 1)
	assert.Equal(t, want, got[1].Content, "summary content:\n got %q\nwant %q", got[1].Content, want)
	wantMeta := map[string]string{"summary": "1", "summary_text": "Goal: fix the parser.", "compact_failures": "0",
		"read_files": "a.go\nb.go", "modified_files": "e.go"}
	for k, v := range wantMeta {
		assert.Equal(t, v, got[1].Meta[k], "Meta[%q] = %q, want %q", k, got[1].Meta[k], v)
	}
	assert.Len(t, got[1].Meta, len(wantMeta), "Meta = %v", got[1].Meta)
	assert.Equal(t, "Now run the tests.", got[2].Content, "kept part starts with %q", got[2].Content)
}

func TestCompactUpdatesThePreviousSummary(t *testing.T) {
	var infos []builtin.Info
	model := &fakeModel{}
	c := builtin.Compact(builtin.CompactConfig{Model: model, OnCompaction: func(i builtin.Info) { infos = append(infos, i) }})
	msgs := conversation(20, 400)
	window := count(msgs) / 2
	got := committed(t, c, newStep(1, msgs, window))
	// The run goes on; the transcript grows past the threshold again.
	for i := 20; count(got) <= window*8/10; i++ {
		more := conversation(i+1, 400)
		got = append(got, more[len(more)-5:]...)
	}
	again := committed(t, c, newStep(2, got, window))
	require.NotNil(t, again, "no second compaction")
	n, at := summaries(again)
	require.Equal(t, 1, n, "%d summaries at %d:\n%s", n, at, dump(again))
	require.Equal(t, 1, at, "%d summaries at %d:\n%s", n, at, dump(again))
	assert.Equal(t, "2", again[1].Meta[builtin.MetaSummary], "second summary: %+v", again[1])
	assert.Contains(t, again[1].Content, "Summary #2", "second summary: %+v", again[1])
	calls := model.Calls()
	require.Len(t, calls, 2, "model calls")
	require.Contains(t, calls[1].user, "<previous-summary>\nSummary #1 of the conversation.\n</previous-summary>", "second call:\n%s", calls[1].user)
	require.Contains(t, calls[1].user, "Update the previous summary", "second call:\n%s", calls[1].user)
	assert.NotContains(t, calls[1].user, "[earlier summary]", "the previous summary was rendered as a message too")
	if assert.Len(t, infos, 2, "infos = %+v", infos) {
		assert.True(t, infos[1].Incremental, "infos = %+v", infos)
	}
	// Files accumulate across compactions.
	assert.Contains(t, again[1].Meta[builtin.MetaReadFiles], "r0.go", "r0.go was forgotten: %q", again[1].Meta[builtin.MetaReadFiles])
}

func TestCompactSplitTurn(t *testing.T) {
	var info builtin.Info
	model := &fakeModel{}
	c := builtin.Compact(builtin.CompactConfig{Model: model, OnCompaction: func(i builtin.Info) { info = i }})
	// One long turn: a request, then many tool calls.
	msgs := []defs.Message{user("Task: refactor."), user("Do all files.")}
	for i := range 30 {
		msgs = append(msgs, toolTurn("c"+strconv.Itoa(i), 400)...)
	}
	window := count(msgs) / 2
	got := committed(t, c, newStep(1, msgs, window))
	require.NotNil(t, got, "no commit")
	require.True(t, info.SplitTurn, "split turn not reported: %+v\n%s", info, dump(got))
	require.Equal(t, defs.RoleAssistant, got[2].Role, "split turn not reported: %+v\n%s", info, dump(got))
	require.Equal(t, "true", got[1].Meta[builtin.MetaSplitTurn], "split turn not reported: %+v\n%s", info, dump(got))
	in := model.Calls()[0].user
	assert.True(t, strings.Contains(in, "ends inside a turn that is still in progress"), "split turn not labelled for the summariser:\n%s", in[:min(len(in), 800)])
	assert.True(t, strings.Contains(in, "[The turn below is still in progress: it continues in the messages kept after this summary.]\n[user]\nDo all files."), "split turn not labelled for the summariser:\n%s", in[:min(len(in), 800)])
}

func TestCompactNeverSeparatesParallelCalls(t *testing.T) {
	model := &fakeModel{}
	for keep := 1; keep < 400; keep += 7 {
		c := builtin.Compact(builtin.CompactConfig{Model: model, KeepRecentTokens: keep})
		msgs := []defs.Message{user("task")}
		for i := range 10 {
			s := strconv.Itoa(i)
			msgs = append(msgs, call("", "read_file:a"+s, "read_file:b"+s, "grep:c"+s),
				result("a"+s, "read_file", strings.Repeat("a", 100)),
				errResult("b"+s, "read_file", "no such file"),
				result("c"+s, "grep", strings.Repeat("c", 50)))
		}
		s := newStep(1, msgs, 1000)
		s.ContextTooLong = true
		committed(t, c, s) // validates pairing
	}
}

func TestCompactBoundsTheSummariserInput(t *testing.T) {
	model := &fakeModel{}
	c := builtin.Compact(builtin.CompactConfig{Model: model, SummaryInputTokens: 500})
	msgs := conversation(40, 800)
	require.NotNil(t, committed(t, c, newStep(1, msgs, count(msgs)/2)), "no commit")
	in := model.Calls()[0].user
	n := count([]defs.Message{user(in)})
	assert.LessOrEqual(t, n, 500, "summariser input is %d tokens, bound 500", n)
	assert.Contains(t, in, "earlier messages left out", "input does not say what was left out:\n%s", in)
}

func TestCompactCircuitBreaker(t *testing.T) {
	var infos []builtin.Info
	model := &fakeModel{reply: func(int, string, string) (string, error) { return "", errModelDown }}
	st := state.New()
	cfg := builtin.CompactConfig{Model: model, State: st, OnCompaction: func(i builtin.Info) { infos = append(infos, i) }}
	c := builtin.Compact(cfg)
	msgs := conversation(20, 400)
	window := count(msgs) / 2
	for step := range 5 {
		s := newStep(step, msgs, window)
		s.ContextTooLong = true
		got := committed(t, c, s)
		require.NotNil(t, got, "step %d: no fallback compaction", step)
		msgs = got
		more := conversation(2, 400)
		msgs = append(msgs, more[1:]...)
		// Re-id the appended calls so ids stay unique.
		for i := len(msgs) - 10; i < len(msgs); i++ {
			for j := range msgs[i].ToolCalls {
				msgs[i].ToolCalls[j].ID += "s" + strconv.Itoa(step)
			}
			if msgs[i].ToolCallID != "" {
				msgs[i].ToolCallID += "s" + strconv.Itoa(step)
			}
		}
	}
	n := len(model.Calls())
	require.Equal(t, 3, n, "model called %d times, want 3 then the breaker open", n)
	for i, info := range infos {
		assert.Equal(t, builtin.StrategyHeuristic, info.Strategy, "compaction %d: %+v", i, info)
		assert.Error(t, info.Err, "compaction %d: %+v", i, info)
	}
	assert.ErrorIs(t, infos[4].Err, builtin.ErrBreakerOpen, "breaker: %+v", infos)
	assert.True(t, infos[4].BreakerOpen, "breaker: %+v", infos)
	assert.Equal(t, 3, infos[2].Failures, "breaker: %+v", infos)
	assert.ErrorIs(t, infos[0].Err, errModelDown, "first error = %v", infos[0].Err)
	n, _ = state.Get[int](context.Background(), st, builtin.DefaultStateKey)
	assert.Equal(t, 3, n, "state holds %d failures", n)
	// A resumed run (a new effect) over the transcript keeps the breaker
	// open, from the summary's Meta alone.
	_, at := summaries(msgs)
	require.Equal(t, "3", msgs[at].Meta[builtin.MetaFailures], "summary meta %v", msgs[at].Meta)
	require.Contains(t, msgs[at].Content, "Summarised by rule", "summary meta %v", msgs[at].Meta)
	resumed := builtin.Compact(builtin.CompactConfig{Model: model})
	s := newStep(9, msgs, window)
	s.ContextTooLong = true
	committed(t, resumed, s)
	n = len(model.Calls())
	require.Equal(t, 3, n, "resumed run called the model (%d calls)", n)
}

func TestCompactRecoversAfterAFailure(t *testing.T) {
	model := &fakeModel{reply: func(n int, _, _ string) (string, error) {
		if n == 1 {
			return "", errModelDown
		}
		return "fine", nil
	}}
	var infos []builtin.Info
	c := builtin.Compact(builtin.CompactConfig{Model: model, OnCompaction: func(i builtin.Info) { infos = append(infos, i) }})
	msgs := conversation(20, 400)
	s := newStep(1, msgs, count(msgs)/2)
	s.ContextTooLong = true
	got := committed(t, c, s)
	s = newStep(2, got, count(msgs)/2)
	s.ContextTooLong = true
	got = committed(t, c, s)
	assert.Equal(t, builtin.StrategySummarize, infos[1].Strategy, "after a success: %+v, meta %v", infos[1], got[1].Meta)
	assert.Zero(t, infos[1].Failures, "after a success: %+v, meta %v", infos[1], got[1].Meta)
	assert.Equal(t, "0", got[1].Meta[builtin.MetaFailures], "after a success: %+v, meta %v", infos[1], got[1].Meta)
}

func TestCompactContextTooLongForcesCompaction(t *testing.T) {
	model := &fakeModel{}
	c := builtin.Compact(builtin.CompactConfig{Model: model})
	msgs := conversation(10, 300)
	window := count(msgs) * 10 // far below the threshold
	s := newStep(1, msgs, window)
	s.ContextTooLong = true
	got := committed(t, c, s)
	require.NotNil(t, got, "ContextTooLong did not force a summary")
	require.Len(t, model.Calls(), 1, "ContextTooLong did not force a summary")
	assert.LessOrEqual(t, count(got), count(msgs)*3/4, "forced compaction kept %d of %d tokens", count(got), count(msgs))
}

func TestCompactRuleBasedStrategies(t *testing.T) {
	for _, st := range []builtin.Strategy{builtin.StrategyTruncate, builtin.StrategyWindow, builtin.StrategyHeuristic} {
		t.Run(string(st), func(t *testing.T) {
			var info builtin.Info
			model := &fakeModel{}
			c := builtin.Compact(builtin.CompactConfig{Model: model, Strategy: st, OnCompaction: func(i builtin.Info) { info = i }})
			msgs := conversation(20, 400)
			window := count(msgs) / 2
			got := committed(t, c, newStep(1, msgs, window))
			require.NotNil(t, got, "no commit")
			require.Empty(t, model.Calls(), "a rule-based strategy called the model")
			assert.Equal(t, st, info.Strategy, "strategy %q", info.Strategy)
			n, at := summaries(got)
			switch st {
			case builtin.StrategyTruncate:
				assert.Zero(t, n, "truncate: %d summaries\n%s", n, dump(got))
				assert.Equal(t, msgs[0].Content, got[0].Content, "truncate: the task is not first\n%s", dump(got))
			case builtin.StrategyWindow:
				assert.Equal(t, 1, n, "window: %d summaries at %d\n%s", n, at, dump(got))
				assert.Equal(t, 1, at, "window: %d summaries at %d\n%s", n, at, dump(got))
				assert.LessOrEqual(t, len(got), 2+builtin.DefaultWindowMessages, "window kept %d messages\n%s", len(got), dump(got))
			default:
				require.Equal(t, 1, n, "heuristic: %d summaries at %d", n, at)
				require.Equal(t, 1, at, "heuristic: %d summaries at %d", n, at)
				text := got[1].Meta[builtin.MetaSummaryText]
				for _, want := range []string{"Summarised by rule", "User requests (most recent last):\n- Step", "Tools used: read_file ×", "write_file ×"} {
					assert.Contains(t, text, want, "heuristic summary lacks %q:\n%s", want, text)
				}
			}
			assert.LessOrEqual(t, count(got), window*8/10, "%d tokens after, threshold %d", count(got), window*8/10)
		})
	}
}

func TestCompactSummaryAtStartWithoutTask(t *testing.T) {
	model := &fakeModel{}
	c := builtin.Compact(builtin.CompactConfig{Model: model})
	msgs := conversation(20, 400)[1:] // starts with a user message that is a step, still the "task"
	msgs = append([]defs.Message{assistant("Hello, what shall I do?")}, msgs...)
	got := committed(t, c, newStep(1, msgs, count(msgs)/2))
	n, at := summaries(got)
	require.Equal(t, 1, n, "%d summaries at %d", n, at)
	require.Equal(t, 0, at, "%d summaries at %d", n, at)
	// A second compaction updates it in place.
	s := newStep(2, got, count(msgs)/2)
	s.ContextTooLong = true
	again := committed(t, c, s)
	n, at = summaries(again)
	require.Equal(t, 1, n, "%d summaries at %d:\n%s", n, at, dump(again))
	require.Equal(t, 0, at, "%d summaries at %d:\n%s", n, at, dump(again))
	require.Equal(t, "2", again[0].Meta[builtin.MetaSummary], "%d summaries at %d:\n%s", n, at, dump(again))
}

func TestCompactUsesStepModel(t *testing.T) {
	model := &fakeModel{}
	c := builtin.Compact(builtin.CompactConfig{})
	msgs := conversation(20, 400)
	s := newStep(1, msgs, count(msgs)/2)
	s.Model = model
	require.NotNil(t, committed(t, c, s), "Step.Model was not used")
	require.Len(t, model.Calls(), 1, "Step.Model was not used")
}

func TestCompactCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	model := &fakeModel{reply: func(int, string, string) (string, error) { cancel(); return "", context.Canceled }}
	c := builtin.Compact(builtin.CompactConfig{Model: model})
	msgs := conversation(20, 400)
	s := newStep(1, msgs, count(msgs)/2)
	require.ErrorIs(t, c(ctx, s), context.Canceled)
}

func TestCompactHeuristicSummary(t *testing.T) {
	c := builtin.Compact(builtin.CompactConfig{Strategy: builtin.StrategyHeuristic, KeepRecentTokens: 20})
	msgs := []defs.Message{
		user("Task: make the build pass."),
		user("First, find the failing test."),
		call("Looking.", "run:t1"),
		errResult("t1", "run", "error: FAIL TestParse: unexpected EOF"),
		call("Reading the parser.", "read_file:p1", "grep:g1"),
		result("p1", "read_file", strings.Repeat("p", 2000)),
		result("g1", "grep", "parser.go:10"),
		call("Fixing.", "edit_file:e1"),
		result("e1", "edit_file", "ok"),
		call("", "run:t2"),
		result("t2", "run", "PASS"),
	}
	s := newStep(1, msgs, 3000)
	s.ContextTooLong = true
	got := committed(t, c, s)
	require.NotNil(t, got, "no commit")
	text := got[1].Meta[builtin.MetaSummaryText]
	for _, want := range []string{
		"Summarised by rule, without a model:",
		"User requests (most recent last):\n- First, find the failing test.",
		"Assistant notes (most recent last):\n- Looking.\n- Reading the parser.\n- Fixing.",
		"Tool errors (most recent last):\n- run: error: FAIL TestParse: unexpected EOF",
		"Tools used: run ×1 (1 failed), read_file ×1, grep ×1, edit_file ×1",
		"Current turn (in progress, continues after this summary): it began with the request \"First, find the failing test.\"",
	} {
		assert.Contains(t, text, want, "summary lacks %q:\n%s", want, text)
	}
	assert.Equal(t, "e1.go", got[1].Meta[builtin.MetaModifiedFiles], "files: %v", got[1].Meta)
	assert.Equal(t, "p1.go", got[1].Meta[builtin.MetaReadFiles], "files: %v", got[1].Meta)
}

func TestCompactTarget(t *testing.T) {
	var info builtin.Info
	c := builtin.Compact(builtin.CompactConfig{Strategy: builtin.StrategyTruncate, Threshold: 0.9, Target: 0.3, OnCompaction: func(i builtin.Info) { info = i }})
	msgs := conversation(30, 100)
	window := count(msgs) * 100 / 95
	got := committed(t, c, newStep(1, msgs, window))
	require.NotNil(t, got, "no commit")
	n := count(got)
	assert.LessOrEqual(t, n, window*3/10, "%d tokens after, target %d (info %+v)", n, window*3/10, info)
}

func TestCompactNeverModifiesTheTranscript(t *testing.T) {
	// Nothing to summarise (one turn after the task) and nothing old to
	// trim: only the kept results can be trimmed, in a copy.
	msgs := []defs.Message{user("task"), call("", "read_file:a", "read_file:b"),
		result("a", "read_file", strings.Repeat("a", 4000)), result("b", "read_file", strings.Repeat("b", 4000))}
	orig := append([]defs.Message(nil), msgs...)
	c := builtin.Compact(builtin.CompactConfig{Strategy: builtin.StrategyHeuristic})
	got := committed(t, c, newStep(1, msgs, 1500))
	require.NotNil(t, got, "kept results not trimmed:\n%s", dump(got))
	require.NotEmpty(t, got[2].Meta[builtin.MetaTrimmed], "kept results not trimmed:\n%s", dump(got))
	for i := range msgs {
		require.Equal(t, orig[i].Content, msgs[i].Content, "message %d of the step's transcript was modified", i)
		require.Nil(t, msgs[i].Meta, "message %d of the step's transcript was modified", i)
	}
}

// TestCompactKeepsDeclaredSystemMessagesAndTask: a transcript that starts
// with declared system messages keeps them and the task verbatim; the
// summary follows them.
func TestCompactKeepsDeclaredSystemMessagesAndTask(t *testing.T) {
	for _, st := range []builtin.Strategy{builtin.StrategySummarize, builtin.StrategyHeuristic, builtin.StrategyWindow} {
		t.Run(string(st), func(t *testing.T) {
			head := []defs.Message{{Role: defs.RoleSystem, Content: "Never delete files."}, user("Task: fix the parser.")}
			msgs := append(head, conversation(20, 400)[1:]...)
			c := builtin.Compact(builtin.CompactConfig{Model: &fakeModel{}, Strategy: st})
			got := committed(t, c, newStep(1, msgs, count(msgs)/2))
			require.NotNil(t, got, "no commit")
			require.Equal(t, head[0].Content, got[0].Content, "declared system message or task not kept:\n%s", dump(got))
			require.Equal(t, head[1].Content, got[1].Content, "declared system message or task not kept:\n%s", dump(got))
			n, at := summaries(got)
			assert.Equal(t, 1, n, "%d summaries at %d, want 1 right after the task\n%s", n, at, dump(got))
			assert.Equal(t, 2, at, "%d summaries at %d, want 1 right after the task\n%s", n, at, dump(got))
			// A second compaction updates the summary where it is.
			more := append(append([]defs.Message(nil), got...), conversation(20, 400)[1:]...)
			again := committed(t, c, newStep(2, more, count(more)/2))
			n, at = summaries(again)
			assert.Equal(t, 1, n, "second compaction: %d summaries at %d\n%s", n, at, dump(again))
			assert.Equal(t, 2, at, "second compaction: %d summaries at %d\n%s", n, at, dump(again))
			assert.Equal(t, head[0].Content, again[0].Content, "second compaction: %d summaries at %d\n%s", n, at, dump(again))
		})
	}
}

// TestCompactWindowKeepsTheLastToolResults: when the newest messages are
// all results of one parallel call, the window strategy keeps them and the
// call rather than summarising the turn the model is about to read.
func TestCompactWindowKeepsTheLastToolResults(t *testing.T) {
	msgs := conversation(10, 400)
	ids := make([]string, 0, 12)
	for i := range 12 {
		ids = append(ids, fmt.Sprintf("read_file:p%d", i))
	}
	msgs = append(msgs, call("", ids...))
	for i := range 12 {
		msgs = append(msgs, result(fmt.Sprintf("p%d", i), "read_file", strings.Repeat("r", 300)))
	}
	c := builtin.Compact(builtin.CompactConfig{Strategy: builtin.StrategyWindow, WindowMessages: 4})
	got := committed(t, c, newStep(1, msgs, count(msgs)/2))
	require.NotNil(t, got, "no commit")
	tail := got[len(got)-13:]
	require.Len(t, tail[0].ToolCalls, 12, "the call of the last results was not kept:\n%s", dump(got))
	for i, m := range tail[1:] {
		require.Equal(t, fmt.Sprintf("p%d", i), m.ToolCallID, "result %d not kept:\n%s", i, dump(got))
	}
}

// continuingModel is a fakeModel that can also continue the run's
// request (effects.Continuer), and records those calls apart.
type continuingModel struct {
	fakeModel
	msgs         [][]defs.Message
	instructions []string
}

func (c *continuingModel) Continue(ctx context.Context, msgs []defs.Message, instruction string) (string, error) {
	c.msgs, c.instructions = append(c.msgs, msgs), append(c.instructions, instruction)
	return "Continued summary.", nil
}

// TestCompactContinues: with Continue and a model that continues the
// run's request, the summary is asked for with the messages it replaces
// as the transcript has them (the task, then the older messages: a prefix
// of the cached request) and the instructions; without Continue, or for a
// request too long for the window, the usual way.
func TestCompactContinues(t *testing.T) {
	msgs := conversation(20, 400)
	window := count(msgs) * 100 / 90 // above the 0.8 threshold, within the window
	for _, tc := range []struct {
		name      string
		cont      bool
		window    int
		continued bool
	}{
		{"continue", true, window, true},
		{"not asked", false, window, false},
		{"too long to continue", true, count(msgs) / 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var info builtin.Info
			model := &continuingModel{}
			c := builtin.Compact(builtin.CompactConfig{Model: model, Continue: tc.cont, OnCompaction: func(i builtin.Info) { info = i }})
			got := committed(t, c, newStep(5, msgs, tc.window))
			require.NotNil(t, got, "no commit")
			if !tc.continued {
				assert.Empty(t, model.msgs, "continued")
				assert.Len(t, model.Calls(), 1, "summaries the usual way")
				return
			}
			require.Len(t, model.msgs, 1, "continued calls")
			assert.Empty(t, model.Calls(), "summaries the usual way")
			sent := model.msgs[0]
			require.Equal(t, 1+info.Summarized, len(sent), "the task and the messages summarised")
			assert.Empty(t, cmp.Diff(msgs[:len(sent)], sent), "the transcript's prefix (-want +got)")
			assert.True(t, strings.HasPrefix(model.instructions[0], builtin.DefaultSummaryPrompt), "the instructions: %q", model.instructions[0])
			assert.Contains(t, got[1].Content, "Continued summary.", "the summary")
		})
	}
}
