package builtin_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/effects/builtin"
)

func history(n, size int) []defs.Message {
	msgs := []defs.Message{user("task")}
	for i := range n {
		msgs = append(msgs, toolTurn("c"+strconv.Itoa(i), size)...)
	}
	return msgs
}

func TestTrimWaitsForABatch(t *testing.T) {
	trim := builtin.TrimToolResults(builtin.TrimConfig{Batch: 4}) // preserve 4 by default
	// 7 results: 3 are old, fewer than a batch.
	msgs := history(7, 2000)
	got := committed(t, trim, newStep(0, msgs, 0))
	require.Nil(t, got, "trimmed with only 3 old results:\n%s", dump(got))
	// 8 results: 4 old ones, a batch: all four trimmed in one commit.
	msgs = append(msgs, toolTurn("c7", 2000)...)
	got = committed(t, trim, newStep(1, msgs, 0))
	require.NotNil(t, got, "no commit with 4 old results")
	for i, m := range got {
		if m.Role != defs.RoleTool {
			continue
		}
		old := i < len(got)-8
		trimmed := m.Meta[builtin.MetaTrimmed] != ""
		assert.Equal(t, old, trimmed, "message %d: trimmed=%v, want %v", i, trimmed, old)
		if old {
			assert.Equal(t, "2000", m.Meta[builtin.MetaTrimmed], "message %d: Meta trimmed = %q, want the original length 2000", i, m.Meta[builtin.MetaTrimmed])
			assert.True(t, strings.HasPrefix(m.Content, strings.Repeat("x", 500)+"\n[… trimmed 1500 of 2000 characters]"), "message %d: content %q", i, m.Content)
			assert.LessOrEqual(t, len(m.Content), 600, "message %d: content %q", i, m.Content)
		} else {
			assert.Len(t, m.Content, 2000, "recent message %d was changed", i)
		}
	}
	assert.Nil(t, msgs[2].Meta, "the step's transcript was modified in place")
	assert.Len(t, msgs[2].Content, 2000, "the step's transcript was modified in place")
	// The next step: nothing new is old enough; nothing is trimmed again.
	next := append(got, assistant("thinking"))
	again := committed(t, trim, newStep(2, next, 0))
	require.Nil(t, again, "trimmed again:\n%s", dump(again))
}

func TestTrimNeverCutsErrorsOrSmallSavings(t *testing.T) {
	trim := builtin.TrimToolResults(builtin.TrimConfig{PreserveRecent: -1, Batch: 1})
	msgs := []defs.Message{
		user("task"),
		call("", "run:e1"), errResult("e1", "run", strings.Repeat("e", 5000)),
		call("", "run:s1"), result("s1", "run", strings.Repeat("s", 600)), // saves < 200
		call("", "run:l1"), result("l1", "run", strings.Repeat("l", 900)),
	}
	got := committed(t, trim, newStep(0, msgs, 0))
	require.NotNil(t, got, "no commit")
	assert.Equal(t, msgs[2].Content, got[2].Content, "an error result was trimmed")
	assert.Nil(t, got[2].Meta, "an error result was trimmed")
	assert.Equal(t, msgs[4].Content, got[4].Content, "a result was trimmed for a saving below MinSaving")
	assert.Equal(t, "900", got[6].Meta[builtin.MetaTrimmed], "long result not trimmed: %v", got[6].Meta)
}

func TestTrimRescansAnotherTranscript(t *testing.T) {
	trim := builtin.TrimToolResults(builtin.TrimConfig{Batch: 1, PreserveRecent: 1})
	a := history(3, 1000)
	require.NotNil(t, committed(t, trim, newStep(0, a, 0)), "no commit on a")
	// Another run's transcript, shorter: the effect must not reuse what it
	// learnt of a.
	b := []defs.Message{user("other"), call("", "read_file:z1"), result("z1", "read_file", "short")}
	got := committed(t, trim, newStep(0, b, 0))
	require.Nil(t, got, "trimmed b:\n%s", dump(got))
	b = append(b, toolTurn("z2", 1000)...)
	b = append(b, toolTurn("z3", 1000)...)
	got = committed(t, trim, newStep(1, b, 0))
	require.NotNil(t, got, "want z2 trimmed only:\n%s", dump(got))
	require.NotEmpty(t, got[4].Meta[builtin.MetaTrimmed], "want z2 trimmed only:\n%s", dump(got))
	require.Nil(t, got[2].Meta, "want z2 trimmed only:\n%s", dump(got))
}

func TestTrimRespectsEarlierTrimming(t *testing.T) {
	trim := builtin.TrimToolResults(builtin.TrimConfig{Batch: 1, PreserveRecent: -1})
	msgs := history(2, 1000)
	msgs[2].Meta = map[string]string{builtin.MetaTrimmed: "5000"}
	got := committed(t, trim, newStep(0, msgs, 0))
	require.NotNil(t, got, "no commit")
	assert.Equal(t, msgs[2].Content, got[2].Content, "a message trimmed before was trimmed again")
	assert.Equal(t, "5000", got[2].Meta[builtin.MetaTrimmed], "a message trimmed before was trimmed again")
}

func TestTrimDefaultBatch(t *testing.T) {
	trim := builtin.TrimToolResults(builtin.TrimConfig{})
	msgs := history(11, 2000) // 7 old results: fewer than a default batch
	got := committed(t, trim, newStep(0, msgs, 0))
	require.Nil(t, got, "trimmed fewer than DefaultTrimBatch results")
	msgs = append(msgs, toolTurn("c11", 2000)...)
	got = committed(t, trim, newStep(1, msgs, 0))
	n := 0
	for _, m := range got {
		if m.Meta[builtin.MetaTrimmed] != "" {
			n++
		}
	}
	require.Equal(t, builtin.DefaultTrimBatch, n, "trimmed %d, want %d", n, builtin.DefaultTrimBatch)
}

func TestTrimPreserveTurns(t *testing.T) {
	trim := builtin.TrimToolResults(builtin.TrimConfig{PreserveTurns: 1, Batch: 1})
	long := strings.Repeat("x", 2000)
	// Three parallel results the model has not read yet: all kept, even
	// though PreserveRecent's default would have let two of them go.
	msgs := []defs.Message{user("task"),
		call("", "read_file:a", "read_file:b", "read_file:c"),
		result("a", "read_file", long), result("b", "read_file", long), result("c", "read_file", long)}
	got := committed(t, trim, newStep(0, msgs, 0))
	require.Nil(t, got, "trimmed results the model has not answered yet:\n%s", dump(got))
	// The model answered them with another call: a, b, c are trimmed in one
	// commit; the new result d is kept.
	msgs = append(msgs, call("", "read_file:d"), result("d", "read_file", long))
	got = committed(t, trim, newStep(1, msgs, 0))
	require.NotNil(t, got, "no commit after the model answered three long results")
	for i, m := range got {
		if m.Role != defs.RoleTool {
			continue
		}
		wantTrimmed := m.ToolCallID != "d"
		trimmed := m.Meta[builtin.MetaTrimmed] != ""
		assert.Equal(t, wantTrimmed, trimmed, "message %d (%s): trimmed=%v, want %v", i, m.ToolCallID, trimmed, wantTrimmed)
	}
	// The first rewritten message is the first result of the answered
	// turn: everything before it is untouched, so the cached prefix holds.
	for i := range 2 {
		assert.Equal(t, msgs[i].Content, got[i].Content, "message %d before the answered turn changed", i)
		assert.Nil(t, got[i].Meta, "message %d before the answered turn changed", i)
	}
}

// TestTrimDeclaresItsNextRewrite: after each run the effect declares
// (Step.WillRewrite) where its next run may start rewriting: with
// PreserveTurns, at the first result the next reply makes old, if a batch
// of them will be; with PreserveRecent, at the first candidate (the next
// step may bring any number of results); nothing (the transcript's length)
// when no result waits.
func TestTrimDeclaresItsNextRewrite(t *testing.T) {
	answered := append(history(1, 2000), toolTurn("c1", 2000)...) // c0 answered by c1's call
	for _, tc := range []struct {
		name string
		cfg  builtin.TrimConfig
		msgs []defs.Message
		want int
	}{
		{"the newest result, old after the next reply", builtin.TrimConfig{PreserveTurns: 1, Batch: 1}, history(1, 2000), 2},
		{"after trimming c0, c1", builtin.TrimConfig{PreserveTurns: 1, Batch: 1}, answered, 4},
		{"short results: nothing", builtin.TrimConfig{PreserveTurns: 1, Batch: 1}, history(2, 100), 5},
		{"not a batch yet", builtin.TrimConfig{PreserveTurns: 1, Batch: 3}, answered, 5},
		{"preserve recent: the first candidate", builtin.TrimConfig{Batch: 8}, history(3, 2000), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStep(0, tc.msgs, 0)
			s.Phase = effects.AfterReply
			require.NoError(t, builtin.TrimToolResults(tc.cfg)(context.Background(), s))
			mods := s.Mods()
			assert.True(t, mods.Rewrites, "declared")
			assert.Equal(t, tc.want, mods.RewriteFrom, "the next rewrite's first message")
		})
	}
}
