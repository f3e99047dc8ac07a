package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/internal/convtest"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/session/sessiontest"
	"github.com/reprompt/reprompt/session/sqlite"
)

var mu sync.Mutex

func TestConformance(t *testing.T) {
	paths := map[session.Store]string{}
	sessiontest.Run(t, func(t *testing.T) session.Store {
		path := filepath.Join(t.TempDir(), "sessions.db")
		st, err := sqlite.Open(path)
		require.NoError(t, err)
		t.Cleanup(func() { st.Close() })
		mu.Lock()
		paths[st] = path
		mu.Unlock()
		return st
	}, sessiontest.WithDamage(func(t *testing.T, st session.Store, id string, d sessiontest.Damage) {
		mu.Lock()
		path := paths[st]
		mu.Unlock()
		Damage(t, path, id, d)
	}))
}

// The conversation of internal/convtest on SQLite: turns in fresh
// runners, interrupted turns resumed, two runners racing.
func TestConversation(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "sessions.db"))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	convtest.Run(t, st)
}

// Damage applies d to session id's latest checkpoint in the database at
// path, through a connection of its own.
func Damage(t *testing.T, path, id string, d sessiontest.Damage) {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	require.NoError(t, err)
	defer db.Close()
	var seq int64
	var gen, n int
	require.NoError(t, db.QueryRow(`SELECT seq, generation, messages FROM sessions WHERE id = ?`, id).Scan(&seq, &gen, &n))
	if d.OnHead() {
		var head []byte
		require.NoError(t, db.QueryRow(`SELECT head FROM checkpoints WHERE session = ? AND seq = ?`, id, seq).Scan(&head))
		_, err := db.Exec(`UPDATE checkpoints SET head = ? WHERE session = ? AND seq = ?`, d.Apply(head), id, seq)
		require.NoError(t, err)
		return
	}
	if d == sessiontest.DropMessage {
		_, err := db.Exec(`DELETE FROM messages WHERE session = ? AND generation = ? AND idx = ?`, id, gen, n-1)
		require.NoError(t, err)
		return
	}
	var data []byte
	require.NoError(t, db.QueryRow(`SELECT data FROM messages WHERE session = ? AND generation = ? AND idx = ?`, id, gen, n-1).Scan(&data))
	_, err = db.Exec(`UPDATE messages SET data = ? WHERE session = ? AND generation = ? AND idx = ?`, d.Apply(data), id, gen, n-1)
	require.NoError(t, err)
}

// TestReopen checks that a saved session survives closing and reopening the
// file, and that the file is in WAL mode.
func TestReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	st, err := sqlite.Open(path)
	require.NoError(t, err)
	cp := sessiontest.Fixture("durable", 40)
	require.NoError(t, st.Save(ctx, cp))
	cp.Transcript = append(cp.Transcript, sessiontest.Messages(40, 2)...)
	cp.Step++
	require.NoError(t, st.Save(ctx, cp))
	require.NoError(t, st.Close())
	st, err = sqlite.Open(path)
	require.NoError(t, err)
	defer st.Close()
	got, err := st.Latest(ctx, "durable")
	require.NoError(t, err)
	require.Equal(t, int64(2), got.Seq, "after reopening: seq %d, %d messages", got.Seq, len(got.Transcript))
	require.Len(t, got.Transcript, 42, "after reopening: seq %d, %d messages", got.Seq, len(got.Transcript))
	require.Equal(t, got.Transcript, cp.Transcript, "after reopening: seq %d, %d messages", got.Seq, len(got.Transcript))
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	var mode string
	require.NoError(t, db.QueryRow("PRAGMA journal_mode").Scan(&mode), "journal_mode")
	require.Equal(t, "wal", mode, "journal_mode")
	var rows int
	require.NoError(t, db.QueryRow("SELECT count(*) FROM messages WHERE session = 'durable'").Scan(&rows), "message rows")
	require.Equal(t, 42, rows, "message rows (each message stored once)")
}

func TestOpenInvalidPath(t *testing.T) {
	for _, p := range []string{"", "a?b", filepath.Join(t.TempDir(), "missing-dir", "x.db")} {
		st, err := sqlite.Open(p)
		if !assert.Error(t, err, "Open(%q) succeeded", p) {
			st.Close()
		}
	}
}

// oldSchema is the schema written before Checkpoint.Base existed: no root
// column, no index by idx.
const oldSchema = `
CREATE TABLE sessions (id TEXT PRIMARY KEY, seq INTEGER NOT NULL, step INTEGER NOT NULL, generation INTEGER NOT NULL,
	messages INTEGER NOT NULL, done INTEGER NOT NULL, updated INTEGER NOT NULL);
CREATE TABLE checkpoints (session TEXT NOT NULL, seq INTEGER NOT NULL, step INTEGER NOT NULL, pending INTEGER NOT NULL,
	head BLOB NOT NULL, PRIMARY KEY (session, seq));
CREATE INDEX checkpoints_by_step ON checkpoints (session, step, pending, seq);
CREATE TABLE messages (session TEXT NOT NULL, generation INTEGER NOT NULL, idx INTEGER NOT NULL, data BLOB NOT NULL,
	PRIMARY KEY (session, generation, idx));
`

// TestOpenOldDatabase checks that a database written before Base existed
// opens (twice: the upgrade is idempotent), loads as it was, and takes new
// generations with a Base.
func TestOpenOldDatabase(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec(oldSchema)
	require.NoError(t, err)
	// Two checkpoints as the earlier version wrote them: generation 0, then
	// generation 1 in full.
	cp := sessiontest.Fixture("old", 5)
	var saved []*session.Checkpoint
	var tip session.Tip
	for i, gen := range []int{0, 1} {
		cp.Generation, cp.Step = gen, i+1
		cp.Transcript = append(cp.Transcript, sessiontest.Messages(len(cp.Transcript), 2)...)
		w, err := session.Plan(cp, tip)
		require.NoError(t, err)
		_, err = db.Exec(`INSERT INTO checkpoints VALUES (?, ?, ?, ?, ?)`, "old", w.Tip.Seq, w.Step, w.Pending, w.Head)
		require.NoError(t, err)
		for j, m := range w.Messages {
			_, err := db.Exec(`INSERT INTO messages VALUES (?, ?, ?, ?)`, "old", gen, w.First+j, m)
			require.NoError(t, err)
		}
		_, err = db.Exec(`INSERT OR REPLACE INTO sessions VALUES (?, ?, ?, ?, ?, ?, ?)`, "old", w.Tip.Seq, w.Step, gen, w.Tip.Messages, false, 1)
		require.NoError(t, err)
		tip = w.Tip
		tip.Incarnation = 0 // the earlier version kept none
		cp.Seq = w.Tip.Seq
		c := *cp
		c.Transcript = slices.Clone(cp.Transcript)
		saved = append(saved, &c)
	}
	for range 2 {
		st, err := sqlite.Open(path)
		require.NoError(t, err, "Open of a database from before Base")
		st.Close()
	}
	var version int
	require.NoError(t, db.QueryRow(`PRAGMA user_version`).Scan(&version))
	assert.Equal(t, sqlite.SchemaVersion, version, "schema version recorded by the migration")
	st, err := sqlite.Open(path)
	require.NoError(t, err)
	defer st.Close()
	for i, want := range saved {
		got, err := st.AtStep(ctx, "old", i+1)
		require.NoError(t, err)
		require.Empty(t, cmp.Diff(want.Transcript, got.Transcript), "checkpoint %d from before Base (-want +got)", i+1)
		require.Equal(t, want.Seq, got.Seq, "checkpoint %d from before Base: seq", i+1)
	}
	// A new generation with a Base on the old tip.
	prev := len(cp.Transcript)
	cp.Transcript = append(slices.Clone(cp.Transcript[:prev-1]), defs.AssistantMessage("rewritten"))
	cp.Generation, cp.Base, cp.Step = 2, prev-1, 3
	require.NoError(t, st.Save(ctx, cp))
	got, err := st.Latest(ctx, "old")
	require.NoError(t, err)
	require.Empty(t, cmp.Diff(cp.Transcript, got.Transcript), "new generation on an old database (-want +got)")
	n, err := st.Rows(ctx, "old")
	require.NoError(t, err, "Rows = %d, %v; want 17", n, err)
	require.Equal(t, 7+9+1, n, "Rows = %d, %v; want 17", n, err)
}

// TestDamagedTip checks that a Save on a session whose row in the sessions
// table is damaged (a negative message count) is a *session.CorruptError,
// not a panic.
func TestDamagedTip(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	st, err := sqlite.Open(path)
	require.NoError(t, err)
	defer st.Close()
	cp := sessiontest.Fixture("tip", 4)
	require.NoError(t, st.Save(ctx, cp))
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec(`UPDATE sessions SET messages = -5 WHERE id = 'tip'`)
	require.NoError(t, err)
	cp.Transcript = append(cp.Transcript, sessiontest.Messages(4, 1)...)
	require.NotPanics(t, func() { err = st.Save(ctx, cp) })
	ce, ok := errors.AsType[*session.CorruptError](err)
	require.True(t, ok, "Save = %v, want a *session.CorruptError", err)
	assert.Equal(t, "tip", ce.ID)
}

// TestOpenWhileWriting checks that opening an up-to-date file takes no
// write lock: it succeeds at once while another connection holds one
// (Open used to run its schema statements in an IMMEDIATE transaction,
// waiting for every writer and failing after the busy timeout).
func TestOpenWhileWriting(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	st, err := sqlite.Open(path)
	require.NoError(t, err)
	require.NoError(t, st.Save(ctx, sessiontest.Fixture("busy", 3)))
	require.NoError(t, st.Close())

	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	var version int
	require.NoError(t, conn.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version))
	assert.Equal(t, sqlite.SchemaVersion, version, "PRAGMA user_version")
	_, err = conn.ExecContext(ctx, "BEGIN IMMEDIATE")
	require.NoError(t, err)
	defer conn.ExecContext(ctx, "ROLLBACK")

	start := time.Now()
	st, err = sqlite.Open(path)
	require.NoError(t, err, "Open while another connection writes")
	defer st.Close()
	assert.Less(t, time.Since(start), 2*time.Second, "Open waited for the writer")
	cp, err := st.Latest(ctx, "busy")
	require.NoError(t, err)
	assert.Len(t, cp.Transcript, 3)
}

// TestOpenNewerFile checks that a file of a later schema version is refused
// with an error naming both versions.
func TestOpenNewerFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	st, err := sqlite.Open(path)
	require.NoError(t, err)
	require.NoError(t, st.Close())
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	_, err = db.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, sqlite.SchemaVersion+1))
	require.NoError(t, err)
	require.NoError(t, db.Close())
	_, err = sqlite.Open(path)
	require.Error(t, err)
	// The error is untyped: both versions are only in the text.
	assert.Contains(t, err.Error(), fmt.Sprintf("schema version %d", sqlite.SchemaVersion+1))
}

// TestMigrateVersion1 checks that a file of schema version 1 (before the
// posts table) is migrated on Open: its sessions load, and they take posts.
func TestMigrateVersion1(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v1.db")
	st, err := sqlite.Open(path)
	require.NoError(t, err)
	cp := sessiontest.Fixture("v1", 4)
	require.NoError(t, st.Save(ctx, cp))
	require.NoError(t, st.Close())
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec(`DROP TABLE posts; PRAGMA user_version = 1`)
	require.NoError(t, err, "make the file a version 1 file")

	st, err = sqlite.Open(path)
	require.NoError(t, err, "Open of a version 1 file")
	defer st.Close()
	var version int
	require.NoError(t, db.QueryRow(`PRAGMA user_version`).Scan(&version))
	assert.Equal(t, sqlite.SchemaVersion, version, "schema version after the migration")
	got, err := st.Latest(ctx, "v1")
	require.NoError(t, err, "Latest after the migration")
	assert.Equal(t, cp.Transcript, got.Transcript, "transcript after the migration")
	seq, err := st.Post(ctx, "v1", defs.UserMessage("after the migration"))
	require.NoError(t, err, "Post after the migration")
	assert.Equal(t, int64(1), seq, "first post: seq")
}

// TestOpenExisting: with Config.Existing, a file that is not a store
// already is refused and left as it was; a store opens.
func TestOpenExisting(t *testing.T) {
	dir := t.TempDir()
	foreign := filepath.Join(dir, "app db.sqlite")
	db, err := sql.Open("sqlite", foreign)
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec(`CREATE TABLE foo(x)`)
	require.NoError(t, err)
	_, err = sqlite.OpenConfig(foreign, sqlite.Config{Existing: true})
	require.Error(t, err, "another program's database")
	assert.Contains(t, err.Error(), foreign+" is not a session store")
	var mode string
	require.NoError(t, db.QueryRow(`PRAGMA journal_mode`).Scan(&mode))
	assert.Equal(t, "delete", mode, "the journal mode of the refused file")
	var tables int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'table'`).Scan(&tables))
	assert.Equal(t, 1, tables, "tables of the refused file")

	store := filepath.Join(dir, "sessions.db")
	st, err := sqlite.Open(store)
	require.NoError(t, err)
	require.NoError(t, st.Close())
	st, err = sqlite.OpenConfig(store, sqlite.Config{Existing: true})
	require.NoError(t, err, "a store")
	require.NoError(t, st.Close())

	_, err = sqlite.OpenConfig(filepath.Join(dir, "none.db"), sqlite.Config{Existing: true})
	assert.Error(t, err, "a file that does not exist")
}
