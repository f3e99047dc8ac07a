package main

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session/sqlite"
	"github.com/reprompt/reprompt/snapshots"
)

// TestRewindNotForward rewinds a session, continues it another way, then
// asks for a step past where it now is: the checkpoints of that step are
// those of the abandoned run, and taking one would splice the old run onto
// the new one. rewind refuses, and the session is left as it was.
func TestRewindNotForward(t *testing.T) {
	path := newStore(t)
	store := "sqlite:" + path
	code, _, errs := cli(t, "--store", store, "rewind", "count", "--to", "1")
	require.Equal(t, 0, code, errs)
	st, err := sqlite.Open(path)
	require.NoError(t, err)
	r, err := runtime.Resume(t.Context(), snapshots.Script(snapshots.Text("Stop at one.")), agent, runtime.Config{Store: st, SessionID: "count"})
	require.NoError(t, err)
	_, err = r.Run(t.Context())
	require.NoError(t, err)
	r.Close()
	require.NoError(t, st.Close())

	code, out, errs := cli(t, "--store", store, "rewind", "count", "--to", "3")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, errs, `rewind "count" to step 3: the session is at step 2`)

	code, out, errs = cli(t, "--store", store, "show", "count")
	require.Equal(t, 0, code, errs)
	assert.Equal(t, 2, strings.Count(out, "── step "), out)
	assert.Contains(t, out, "reply (stop): Stop at one.")
	assert.NotContains(t, out, "call_3", "nothing of the abandoned run")
}

// TestRewindToStepZero: the runtime saves no checkpoint before step 0's
// model call, so the store's step 0 is the one saved after its reply.
// rewind says so rather than claim the start of the step.
func TestRewindToStepZero(t *testing.T) {
	store := "sqlite:" + newStore(t)
	code, out, errs := cli(t, "--store", store, "rewind", "count", "--to", "0")
	require.Equal(t, 0, code, errs)
	assert.NotContains(t, out, "the start of step 0")
	assert.Contains(t, out, `session "count" rewound to step 0 after the model's reply (no checkpoint holds the step's start; was at step 4)`)
}

// TestForeignDatabase: a read of another program's SQLite database (or of
// an empty file) fails, and leaves it as it was: no tables of the session
// store added, its journal mode unchanged.
func TestForeignDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app db.sqlite")
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	_, err = db.Exec(`CREATE TABLE foo(x)`)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	empty := filepath.Join(t.TempDir(), "empty.db")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))

	for _, p := range []string{path, empty} {
		for _, args := range [][]string{{"sessions"}, {"show", "s"}, {"rewind", "s", "--to", "0"}} {
			code, _, errs := cli(t, append([]string{"--store", "sqlite:" + p}, args...)...)
			assert.Equal(t, 1, code, "%v: %s", args, errs)
			assert.Contains(t, errs, "not a session store", "%v", args)
		}
	}
	db, err = sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	var tables []string
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
	require.NoError(t, err)
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		tables = append(tables, n)
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, []string{"foo"}, tables)
	var mode string
	require.NoError(t, db.QueryRow(`PRAGMA journal_mode`).Scan(&mode))
	assert.Equal(t, "delete", mode)
	fi, err := os.Stat(empty)
	require.NoError(t, err)
	assert.Zero(t, fi.Size(), "the empty file stays empty")
}
