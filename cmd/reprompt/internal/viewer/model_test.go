package viewer

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDiff compares requests: a shared prefix, then messages added,
// removed, and rewritten (a trimmed tool result, the same call).
func TestDiff(t *testing.T) {
	run := newRun("t", "test")
	user := run.add(Message{Role: "user", Content: "go"})
	call := run.add(Message{Role: "assistant", Calls: []Call{{ID: "c1", Name: "read"}}})
	full := run.add(Message{Role: "tool", CallID: "c1", Name: "read", Content: "a long result"})
	trimmed := run.add(Message{Role: "tool", CallID: "c1", Name: "read", Content: "a lo… (trimmed)", Meta: map[string]string{"trimmed": "13"}})
	answer := run.add(Message{Role: "assistant", Content: "done"})
	summary := run.add(Message{Role: "user", Content: "<summary>…</summary>"})
	again := run.add(Message{Role: "user", Content: "go"})
	require.Equal(t, user, again, "the same message twice got pool indices %d and %d", user, again)
	for _, tt := range []struct {
		name      string
		prev, cur []int
		want      Diff
	}{
		{"appended", []int{user}, []int{user, call, full}, Diff{Shared: 1, Added: []int{call, full}}},
		{"trimmed", []int{user, call, full}, []int{user, call, trimmed, answer}, Diff{Shared: 2, Added: []int{answer}, Rewritten: [][2]int{{full, trimmed}}}},
		{"compacted", []int{user, call, full, answer}, []int{user, summary}, Diff{Shared: 1, Added: []int{summary}, Removed: []int{call, full, answer}}},
		{"same", []int{user, call}, []int{user, call}, Diff{Shared: 2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Empty(t, cmp.Diff(tt.want, run.diff(tt.prev, tt.cur)), "diff mismatch (-want +got)")
		})
	}
}

func TestStateChanges(t *testing.T) {
	got := stateChanges(map[string]string{"a": "1", "b": "2", "gone": "x"}, map[string]string{"a": "1", "b": "3", "new": "[]"})
	want := []Change{{Key: "b", Before: "2", After: "3"}, {Key: "new", After: "[]"}, {Key: "gone", Before: "x"}}
	assert.Empty(t, cmp.Diff(want, got), "changes mismatch (-want +got)")
}

// TestSummaryMarksCacheMiss: the timeline's summary of a step carries why
// its prefix broke, which the page marks.
func TestSummaryMarksCacheMiss(t *testing.T) {
	steps := []*Step{{Number: 0, Reply: -1}, {Number: 1, Reply: -1, CacheMiss: "tool list changed: search declared"}}
	got := stepSummaries(steps)
	require.Len(t, got, 2)
	assert.Empty(t, got[0].Miss, "step 0: Miss")
	assert.Equal(t, "tool list changed: search declared", got[1].Miss, "step 1: Miss")
}
