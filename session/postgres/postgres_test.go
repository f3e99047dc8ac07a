package postgres_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/internal/convtest"
	"github.com/reprompt/reprompt/internal/pgtest"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/session/postgres"
	"github.com/reprompt/reprompt/session/sessiontest"
)

// newPool returns a pool whose search_path is a new schema, dropped when the
// test ends, so that each test has empty tables of its own. It skips the
// test when REPROMPT_PG_URL is not set.
func newPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, _ := newSchema(t)
	return pool
}

// newSchema is newPool, and also returns the schema's name.
func newSchema(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	url := pgtest.URL(t)
	ctx := context.Background()
	name := pgtest.Name("reprompt_test_")
	admin, err := pgx.Connect(ctx, url)
	require.NoError(t, err, "connect to REPROMPT_PG_URL")
	defer admin.Close(ctx)
	_, err = admin.Exec(ctx, "CREATE SCHEMA "+name)
	require.NoError(t, err)
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	cfg.ConnConfig.RuntimeParams["search_path"] = name
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		pool.Close()
		c, err := pgx.Connect(context.Background(), url)
		if err == nil {
			c.Exec(context.Background(), "DROP SCHEMA "+name+" CASCADE")
			c.Close(context.Background())
		}
	})
	return pool, name
}

func TestConformance(t *testing.T) {
	var mu sync.Mutex
	pools := map[session.Store]*pgxpool.Pool{}
	sessiontest.Run(t, func(t *testing.T) session.Store {
		pool := newPool(t)
		st, err := postgres.New(context.Background(), pool)
		require.NoError(t, err)
		mu.Lock()
		pools[st] = pool
		mu.Unlock()
		return st
	}, sessiontest.WithDamage(func(t *testing.T, st session.Store, id string, d sessiontest.Damage) {
		mu.Lock()
		pool := pools[st]
		mu.Unlock()
		damage(t, pool, id, d)
	}))
}

// The conversation of internal/convtest on PostgreSQL: turns in fresh
// runners, interrupted turns resumed, two runners racing.
func TestConversation(t *testing.T) {
	st, err := postgres.New(context.Background(), newPool(t))
	require.NoError(t, err)
	convtest.Run(t, st)
}

func damage(t *testing.T, pool *pgxpool.Pool, id string, d sessiontest.Damage) {
	t.Helper()
	ctx := context.Background()
	var seq, gen, n int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT seq, generation, messages FROM reprompt_sessions WHERE id = $1`, id).Scan(&seq, &gen, &n))
	var err error
	switch {
	case d.OnHead():
		var head []byte
		require.NoError(t, pool.QueryRow(ctx, `SELECT head FROM reprompt_checkpoints WHERE session = $1 AND seq = $2`, id, seq).Scan(&head))
		_, err = pool.Exec(ctx, `UPDATE reprompt_checkpoints SET head = $3 WHERE session = $1 AND seq = $2`, id, seq, d.Apply(head))
	case d == sessiontest.DropMessage:
		_, err = pool.Exec(ctx, `DELETE FROM reprompt_messages WHERE session = $1 AND generation = $2 AND idx = $3`, id, gen, n-1)
	default:
		var data []byte
		require.NoError(t, pool.QueryRow(ctx, `SELECT data FROM reprompt_messages WHERE session = $1 AND generation = $2 AND idx = $3`, id, gen, n-1).Scan(&data))
		_, err = pool.Exec(ctx, `UPDATE reprompt_messages SET data = $4 WHERE session = $1 AND generation = $2 AND idx = $3`, id, gen, n-1, d.Apply(data))
	}
	require.NoError(t, err)
}

// TestOpen checks Open and that two stores on the same tables see each
// other's sessions.
func TestOpen(t *testing.T) {
	pool, schema := newSchema(t)
	url := os.Getenv("REPROMPT_PG_URL")
	ctx := context.Background()
	a, err := postgres.New(ctx, pool)
	require.NoError(t, err)
	cp := sessiontest.Fixture("shared", 3)
	require.NoError(t, a.Save(ctx, cp))
	// Open on a URL naming the same schema sees it.
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	b, err := postgres.Open(ctx, url+sep+"search_path="+schema)
	require.NoError(t, err)
	defer b.Close()
	got, err := b.Latest(ctx, "shared")
	require.NoError(t, err, "a store opened on the same schema: %v, %v", got, err)
	require.Equal(t, int64(1), got.Seq, "a store opened on the same schema: %v, %v", got, err)
	_, err = postgres.Open(ctx, "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	require.Error(t, err, "Open of an unreachable server succeeded")
	a2, err := postgres.New(ctx, pool)
	require.NoError(t, err)
	got, err = a2.Latest(ctx, "shared")
	require.NoError(t, err, "second store: %v, %v", got, err)
	require.Len(t, got.Transcript, 3, "second store: %v, %v", got, err)
}

// oldSchema is the schema written before Checkpoint.Base existed: no root
// column, no index by idx.
const oldSchema = `
CREATE TABLE reprompt_sessions (id TEXT PRIMARY KEY, seq BIGINT NOT NULL, step BIGINT NOT NULL, generation BIGINT NOT NULL,
	messages BIGINT NOT NULL, done BOOLEAN NOT NULL, updated TIMESTAMPTZ NOT NULL);
CREATE TABLE reprompt_checkpoints (session TEXT NOT NULL, seq BIGINT NOT NULL, step BIGINT NOT NULL, pending BOOLEAN NOT NULL,
	head BYTEA NOT NULL, PRIMARY KEY (session, seq));
CREATE INDEX reprompt_checkpoints_by_step ON reprompt_checkpoints (session, step, pending, seq);
CREATE TABLE reprompt_messages (session TEXT NOT NULL, generation BIGINT NOT NULL, idx BIGINT NOT NULL, data BYTEA NOT NULL,
	PRIMARY KEY (session, generation, idx));
`

// TestOldTables checks that tables written before Base existed are
// upgraded (twice: the upgrade is idempotent), load as they were, and take
// new generations with a Base.
func TestOldTables(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t)
	_, err := pool.Exec(ctx, oldSchema)
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
		_, err = pool.Exec(ctx, `INSERT INTO reprompt_checkpoints VALUES ($1, $2, $3, $4, $5)`, "old", w.Tip.Seq, w.Step, w.Pending, w.Head)
		require.NoError(t, err)
		for j, m := range w.Messages {
			_, err := pool.Exec(ctx, `INSERT INTO reprompt_messages VALUES ($1, $2, $3, $4)`, "old", gen, w.First+j, m)
			require.NoError(t, err)
		}
		_, err = pool.Exec(ctx, `INSERT INTO reprompt_sessions VALUES ($1, $2, $3, $4, $5, false, now())
			ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, step = excluded.step, generation = excluded.generation, messages = excluded.messages`,
			"old", w.Tip.Seq, w.Step, gen, w.Tip.Messages)
		require.NoError(t, err)
		tip = w.Tip
		tip.Incarnation = 0 // the earlier version kept none
		cp.Seq = w.Tip.Seq
		c := *cp
		c.Transcript = slices.Clone(cp.Transcript)
		saved = append(saved, &c)
	}
	_, err = postgres.New(ctx, pool)
	require.NoError(t, err, "New on tables from before Base")
	st, err := postgres.New(ctx, pool)
	require.NoError(t, err, "New again")
	var version int
	require.NoError(t, pool.QueryRow(ctx, `SELECT version FROM reprompt_schema`).Scan(&version))
	assert.Equal(t, postgres.SchemaVersion, version, "schema version recorded by the migration")
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
	require.Empty(t, cmp.Diff(cp.Transcript, got.Transcript), "new generation on old tables (-want +got)")
	n, err := st.Rows(ctx, "old")
	require.NoError(t, err, "Rows = %d, %v; want 17", n, err)
	require.Equal(t, 7+9+1, n, "Rows = %d, %v; want 17", n, err)
}

// TestDamagedTip checks that a Save on a session whose row in
// reprompt_sessions is damaged (a negative message count) is a
// *session.CorruptError, not a panic.
func TestDamagedTip(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t)
	st, err := postgres.New(ctx, pool)
	require.NoError(t, err)
	cp := sessiontest.Fixture("tip", 4)
	require.NoError(t, st.Save(ctx, cp))
	_, err = pool.Exec(ctx, `UPDATE reprompt_sessions SET messages = -5 WHERE id = 'tip'`)
	require.NoError(t, err)
	cp.Transcript = append(cp.Transcript, sessiontest.Messages(4, 1)...)
	require.NotPanics(t, func() { err = st.Save(ctx, cp) })
	ce, ok := errors.AsType[*session.CorruptError](err)
	require.True(t, ok, "Save = %v, want a *session.CorruptError", err)
	assert.Equal(t, "tip", ce.ID)
}

// TestMigrateVersion1 checks that tables of schema version 1 (before
// reprompt_posts) are migrated: their sessions load, and they take posts.
func TestMigrateVersion1(t *testing.T) {
	pool := newPool(t)
	ctx := context.Background()
	st, err := postgres.New(ctx, pool)
	require.NoError(t, err)
	cp := sessiontest.Fixture("v1", 4)
	require.NoError(t, st.Save(ctx, cp))
	_, err = pool.Exec(ctx, `DROP TABLE reprompt_posts; UPDATE reprompt_schema SET version = 1`)
	require.NoError(t, err, "make the tables those of version 1")

	st, err = postgres.New(ctx, pool)
	require.NoError(t, err, "New on tables of version 1")
	var version int
	require.NoError(t, pool.QueryRow(ctx, `SELECT version FROM reprompt_schema`).Scan(&version))
	assert.Equal(t, postgres.SchemaVersion, version, "schema version after the migration")
	got, err := st.Latest(ctx, "v1")
	require.NoError(t, err, "Latest after the migration")
	assert.Equal(t, cp.Transcript, got.Transcript, "transcript after the migration")
	seq, err := st.Post(ctx, "v1", defs.UserMessage("after the migration"))
	require.NoError(t, err, "Post after the migration")
	assert.Equal(t, int64(1), seq, "first post: seq")
}
