package session_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/session/sessiontest"
)

// TestLoadDamagedCount checks that a head naming more messages than are
// stored is a *CorruptError that says so, without allocating for the count:
// 10^15 panicked (makeslice: cap out of range) and 4·10^8 exhausted memory.
func TestLoadDamagedCount(t *testing.T) {
	for _, count := range []int64{2, 400_000_000, 1_000_000_000_000_000, 1<<63 - 1} {
		t.Run(fmt.Sprint(count), func(t *testing.T) {
			head := fmt.Appendf(nil, `{"version":1,"session_id":"s","seq":1,"messages":%d}`, count)
			var asked int
			_, err := session.Load("s", 1, head, func(root, gen, n int) ([]session.Row, error) {
				asked = n
				return []session.Row{{Index: 0, Data: []byte(`{"role":"user","content":"a"}`)}}, nil
			})
			ce, ok := errors.AsType[*session.CorruptError](err)
			require.True(t, ok, "err = %v, want a *session.CorruptError", err)
			assert.Equal(t, "s", ce.ID)
			assert.Equal(t, int64(1), ce.Seq)
			// CorruptError.Err is untyped: what is damaged is only in the text.
			assert.Contains(t, err.Error(), fmt.Sprintf("head names %d messages of generation 0, 1 are stored", count))
			assert.Equal(t, int(count), asked, "rows is asked for the count the head names")
		})
	}
}

// TestPlanDamagedTip checks that a tip no Save could have left (read from a
// damaged sessions table) is a *CorruptError, not a panic: a negative
// message count made Plan slice the transcript at a negative index.
func TestPlanDamagedTip(t *testing.T) {
	tips := []session.Tip{
		{Seq: 1, Messages: -1},
		{Seq: 1, Messages: -1 << 62},
		{Seq: -1},
		{Seq: 1, Generation: -2, Root: -2},
		{Seq: 1, Generation: 1, Root: 2},
		{Seq: 1, Generation: 1, Root: -1},
		{Seq: 0, Messages: 3},
	}
	for _, tip := range tips {
		t.Run(fmt.Sprintf("%+v", tip), func(t *testing.T) {
			cp := sessiontest.Fixture("s", 4)
			cp.Seq, cp.Generation = tip.Seq, tip.Generation
			var w *session.Write
			var err error
			require.NotPanics(t, func() { w, err = session.Plan(cp, tip) })
			ce, ok := errors.AsType[*session.CorruptError](err)
			require.True(t, ok, "Plan = %+v, %v; want a *session.CorruptError", w, err)
			assert.Equal(t, "s", ce.ID)
			assert.Equal(t, tip.Seq, ce.Seq)
			// CorruptError.Err is untyped: what is damaged is only in the text.
			assert.Contains(t, err.Error(), "stored tip is damaged")
		})
	}
}
