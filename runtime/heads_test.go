package runtime_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session/sqlite"
	"github.com/reprompt/reprompt/snapshots"
)

// stored is what a long run left in its SQLite file, in bytes.
type stored struct {
	heads, retired, messages int64
	checkpoints              int
	retiredIDs               int // in the latest checkpoint
}

// longRunStored runs the long run (builtin.Defaults for a window of
// 128,000 tokens: results trimmed after the next reply, compaction near
// the window, each compaction retiring the call ids it takes out) for
// steps steps, saving after every step, reply and result into an SQLite
// file, and measures what the file holds.
func longRunStored(tb testing.TB, steps int) stored {
	tb.Helper()
	ctx := context.Background()
	path := filepath.Join(tb.TempDir(), "sessions.db")
	st, err := sqlite.Open(path)
	require.NoError(tb, err)
	defer st.Close()
	_, err = runtime.Run(ctx, snapshots.Script(longRunScript(steps)...), longRunAgent(longRunWindow, longRunReserve),
		runtime.Config{MaxSteps: steps, Window: longRunWindow, Reserve: longRunReserve, Store: st, SessionID: "long"})
	require.NoError(tb, err)
	cp, err := st.Latest(ctx, "long")
	require.NoError(tb, err)
	db, err := sql.Open("sqlite", path)
	require.NoError(tb, err)
	defer db.Close()
	var s stored
	s.retiredIDs = len(cp.RetiredCallIDs)
	require.NoError(tb, db.QueryRow(`SELECT count(*), sum(length(head)) FROM checkpoints`).Scan(&s.checkpoints, &s.heads))
	require.NoError(tb, db.QueryRow(`SELECT sum(length(data)) FROM messages`).Scan(&s.messages))
	require.NoError(tb, db.QueryRow(`SELECT coalesce(sum(length(data)), 0) FROM retired`).Scan(&s.retired))
	return s
}

// TestCheckpointHeadsFlat: the heads a long run writes cost the same per
// step at 900 steps as at 300, though the run retires more and more call
// ids (each is written once, not into every head).
func TestCheckpointHeadsFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 1,200 steps")
	}
	short, long := longRunStored(t, 300), longRunStored(t, 900)
	t.Logf("300 steps: %d B of heads a step, %d retired ids; 900 steps: %d B a step, %d retired ids",
		short.heads/300, short.retiredIDs, long.heads/900, long.retiredIDs)
	require.Greater(t, long.retiredIDs, short.retiredIDs, "the long run retires more call ids: compaction ran")
	assert.Less(t, float64(long.heads)/900, 1.25*float64(short.heads)/300, "head bytes a step at 900 steps against 300")
	assert.Less(t, float64(long.heads+long.retired)/900, 1.25*float64(short.heads+short.retired)/300, "head and retired-id bytes a step at 900 steps against 300")
}

// BenchmarkCheckpointHeads reports what a long run on SQLite writes per
// step: head-B/step (checkpoint heads), retired-B/step (the retired call
// ids stored beside them) and msg-B/step (message rows), at 300, 1,000
// and 3,000 steps.
//
//	go test ./runtime -run '^$' -bench CheckpointHeads -benchtime 1x -count 6
func BenchmarkCheckpointHeads(b *testing.B) {
	for _, steps := range []int{300, 1000, 3000} {
		b.Run(fmt.Sprintf("steps=%d", steps), func(b *testing.B) {
			b.ReportAllocs()
			var s stored
			for b.Loop() {
				s = longRunStored(b, steps)
			}
			b.ReportMetric(float64(s.heads)/float64(steps), "head-B/step")
			b.ReportMetric(float64(s.retired)/float64(steps), "retired-B/step")
			b.ReportMetric(float64(s.messages)/float64(steps), "msg-B/step")
			b.ReportMetric(float64(s.retiredIDs), "retired-ids")
		})
	}
}
