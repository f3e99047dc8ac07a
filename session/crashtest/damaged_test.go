package crashtest

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/session/sqlite"
)

// TestResumeDamagedOrFutureCheckpoint stops a run mid-way on SQLite, then
// damages the latest checkpoint's row in the file (cut short, or marked as
// written by a later format version): Resume fails with a
// *session.CorruptError or a *session.VersionError, runs no tool, and
// saves nothing; a session.Rewind to the step before, saved, is resumed
// and completes.
func TestResumeDamagedOrFutureCheckpoint(t *testing.T) {
	for name, damage := range map[string]func(head string) string{
		"truncated": func(head string) string { return head[:len(head)/2] },
		"future":    func(head string) string { return strings.Replace(head, `"version":1`, `"version":99`, 1) },
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "sessions.db")
			st, err := sqlite.Open(path)
			require.NoError(t, err)
			defer st.Close()
			l := newLedger(t.TempDir())
			stop := &stopStore{Store: st, stop: func(cp *session.Checkpoint) bool { return cp.Step == 4 && cp.Pending == nil }}
			cfg := runtime.Config{Store: stop, SessionID: sessionID, MaxSteps: steps + 5}
			_, err = runtime.New(model{}, agent(l, false), cfg).Run(ctx)
			require.ErrorIs(t, err, errStopped)
			before, err := st.Stat(ctx, sessionID)
			require.NoError(t, err)

			db, err := sql.Open("sqlite", path)
			require.NoError(t, err)
			defer db.Close()
			var head string
			require.NoError(t, db.QueryRow(`SELECT head FROM checkpoints WHERE session = ? AND seq = ?`, sessionID, before.Seq).Scan(&head))
			damaged := damage(head)
			require.NotEqual(t, head, damaged)
			_, err = db.Exec(`UPDATE checkpoints SET head = ? WHERE session = ? AND seq = ?`, []byte(damaged), sessionID, before.Seq)
			require.NoError(t, err)

			attempts := func() int {
				got, err := l.read()
				require.NoError(t, err)
				return len(got)
			}
			ran := attempts()
			cfg.Store = st
			_, err = runtime.Resume(ctx, model{}, agent(l, false), cfg)
			if name == "future" {
				var ve *session.VersionError
				require.True(t, errors.As(err, &ve), "err = %v, want a *session.VersionError", err)
				assert.Equal(t, 99, ve.Got)
			} else {
				require.ErrorIs(t, err, session.ErrCorrupt)
			}
			assert.Equal(t, ran, attempts(), "a tool ran")
			after, err := st.Stat(ctx, sessionID)
			require.NoError(t, err)
			assert.Equal(t, before.Seq, after.Seq, "a checkpoint was saved")

			// The step before the damaged checkpoint can be continued.
			cp, err := session.Rewind(ctx, st, sessionID, before.Step-1)
			require.NoError(t, err)
			require.Equal(t, before.Step-1, cp.Step)
			require.NoError(t, st.Save(ctx, cp)) // as `reprompt rewind` does
			r, err := runtime.Resume(ctx, model{}, agent(l, false), cfg)
			require.NoError(t, err)
			res, err := r.Run(ctx)
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(res.Text, "done after"), res.Text)
			require.NoError(t, runtime.ValidateMessages(res.Transcript))
		})
	}
}
