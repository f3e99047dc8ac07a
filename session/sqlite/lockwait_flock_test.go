//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/session/sessiontest"
	"github.com/reprompt/reprompt/session/sqlite"
)

// TestLockWaitQueue: writers queue on the lock of path+"-writer": a save
// waits while another store's writer holds it, within LockWait, and goes
// through once it is let go.
func TestLockWaitQueue(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sessions.db")
	st, err := sqlite.OpenConfig(path, sqlite.Config{LockWait: 300 * time.Millisecond})
	require.NoError(t, err)
	defer st.Close()
	cp := sessiontest.Fixture("queue", 2)
	require.NoError(t, st.Save(ctx, cp), "a first save makes the lock file")

	f, err := os.OpenFile(path+"-writer", os.O_RDWR, 0)
	require.NoError(t, err, "the lock file beside the database")
	defer f.Close()
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX), "take the writers' lock")
	start := time.Now()
	cp.Step++
	err = st.Save(ctx, cp)
	require.ErrorIs(t, err, sqlite.ErrBusy, "Save while another writer holds the writers' lock for longer than LockWait")
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "Save gave up before LockWait")

	// The lock let go on another goroutine, which ends before f is closed:
	// the kernel's lock orders the two for the test, not for the race
	// detector.
	unlocked := make(chan struct{})
	time.AfterFunc(200*time.Millisecond, func() {
		defer close(unlocked)
		assert.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_UN))
	})
	defer func() { <-unlocked }()
	start = time.Now()
	require.NoError(t, st.Save(ctx, cp), "Save once the writers' lock is let go")
	assert.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond, "Save did not wait for the writers' lock")
	assert.Equal(t, int64(2), cp.Seq, "Seq after the saves")
}
