package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/session/sessiontest"
	"github.com/reprompt/reprompt/session/sqlite"
)

// holdWriteLock takes the write lock of the file at path, as another
// process's save holds it, until the returned function is called.
func holdWriteLock(t *testing.T, path string) (release func()) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	conn, err := db.Conn(context.Background())
	require.NoError(t, err)
	_, err = conn.ExecContext(context.Background(), "BEGIN IMMEDIATE")
	require.NoError(t, err, "take the write lock")
	var once sync.Once // released by a timer's goroutine, then by the cleanup
	release = func() {
		once.Do(func() {
			_, err := conn.ExecContext(context.Background(), "ROLLBACK")
			assert.NoError(t, err, "release the write lock")
			conn.Close()
			db.Close()
		})
	}
	t.Cleanup(release)
	return release
}

// TestLockWait: a save waits for the write lock as long as
// Config.LockWait says, no longer, and then fails with ErrBusy having
// written nothing; a lock released within the bound lets it through; a
// context done ends the wait.
func TestLockWait(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sessions.db")
	st, err := sqlite.OpenConfig(path, sqlite.Config{LockWait: 300 * time.Millisecond})
	require.NoError(t, err)
	defer st.Close()

	release := holdWriteLock(t, path)
	start := time.Now()
	err = st.Save(ctx, sessiontest.Fixture("busy", 2))
	waited := time.Since(start)
	require.ErrorIs(t, err, sqlite.ErrBusy, "Save while another connection writes for longer than LockWait")
	assert.GreaterOrEqual(t, waited, 300*time.Millisecond, "Save gave up before LockWait")
	assert.Less(t, waited, 5*time.Second, "Save waited much longer than LockWait")
	_, err = st.Latest(ctx, "busy")
	assert.ErrorIs(t, err, session.ErrNotFound, "a Save that did not get the lock wrote")
	_, err = st.Post(ctx, "busy", sessiontest.Messages(0, 1)[0])
	assert.Error(t, err, "Post while another connection writes")

	// Released within the bound: the save goes through.
	long, err := sqlite.OpenConfig(path, sqlite.Config{LockWait: 10 * time.Second})
	require.NoError(t, err)
	defer long.Close()
	time.AfterFunc(400*time.Millisecond, release)
	start = time.Now()
	cp := sessiontest.Fixture("busy", 2)
	require.NoError(t, long.Save(ctx, cp), "Save while another connection writes for less than LockWait")
	assert.GreaterOrEqual(t, time.Since(start), 350*time.Millisecond, "Save did not wait for the lock")

	// A context done ends the wait.
	holdWriteLock(t, path)
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start = time.Now()
	cp.Step++
	err = long.Save(cctx, cp)
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "Save with a context done while it waits = %v", err)
	assert.Less(t, time.Since(start), 5*time.Second, "Save went on waiting after its context was done")

	_, err = sqlite.OpenConfig(path, sqlite.Config{LockWait: -time.Second})
	assert.Error(t, err, "OpenConfig with a negative LockWait")
}
