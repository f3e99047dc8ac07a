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
	if err != nil {
		t.Fatalf("connect to REPROMPT_PG_URL: %v", err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = name
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
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
		if err != nil {
			t.Fatal(err)
		}
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

func damage(t *testing.T, pool *pgxpool.Pool, id string, d sessiontest.Damage) {
	t.Helper()
	ctx := context.Background()
	var seq, gen, n int64
	if err := pool.QueryRow(ctx, `SELECT seq, generation, messages FROM reprompt_sessions WHERE id = $1`, id).Scan(&seq, &gen, &n); err != nil {
		t.Fatal(err)
	}
	var err error
	switch {
	case d.OnHead():
		var head []byte
		if err := pool.QueryRow(ctx, `SELECT head FROM reprompt_checkpoints WHERE session = $1 AND seq = $2`, id, seq).Scan(&head); err != nil {
			t.Fatal(err)
		}
		_, err = pool.Exec(ctx, `UPDATE reprompt_checkpoints SET head = $3 WHERE session = $1 AND seq = $2`, id, seq, d.Apply(head))
	case d == sessiontest.DropMessage:
		_, err = pool.Exec(ctx, `DELETE FROM reprompt_messages WHERE session = $1 AND generation = $2 AND idx = $3`, id, gen, n-1)
	default:
		var data []byte
		if err := pool.QueryRow(ctx, `SELECT data FROM reprompt_messages WHERE session = $1 AND generation = $2 AND idx = $3`, id, gen, n-1).Scan(&data); err != nil {
			t.Fatal(err)
		}
		_, err = pool.Exec(ctx, `UPDATE reprompt_messages SET data = $4 WHERE session = $1 AND generation = $2 AND idx = $3`, id, gen, n-1, d.Apply(data))
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestOpen checks Open and that two stores on the same tables see each
// other's sessions.
func TestOpen(t *testing.T) {
	pool, schema := newSchema(t)
	url := os.Getenv("REPROMPT_PG_URL")
	ctx := context.Background()
	a, err := postgres.New(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	cp := sessiontest.Fixture("shared", 3)
	if err := a.Save(ctx, cp); err != nil {
		t.Fatal(err)
	}
	// Open on a URL naming the same schema sees it.
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	b, err := postgres.Open(ctx, url+sep+"search_path="+schema)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got, err := b.Latest(ctx, "shared"); err != nil || got.Seq != 1 {
		t.Fatalf("a store opened on the same schema: %v, %v", got, err)
	}
	if _, err := postgres.Open(ctx, "postgres://nobody@127.0.0.1:1/none?connect_timeout=1"); err == nil {
		t.Fatal("Open of an unreachable server succeeded")
	}
	a2, err := postgres.New(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	got, err := a2.Latest(ctx, "shared")
	if err != nil || len(got.Transcript) != 3 {
		t.Fatalf("second store: %v, %v", got, err)
	}
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
	if _, err := pool.Exec(ctx, oldSchema); err != nil {
		t.Fatal(err)
	}
	// Two checkpoints as the earlier version wrote them: generation 0, then
	// generation 1 in full.
	cp := sessiontest.Fixture("old", 5)
	var saved []*session.Checkpoint
	var tip session.Tip
	for i, gen := range []int{0, 1} {
		cp.Generation, cp.Step = gen, i+1
		cp.Transcript = append(cp.Transcript, sessiontest.Messages(len(cp.Transcript), 2)...)
		w, err := session.Plan(cp, tip)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO reprompt_checkpoints VALUES ($1, $2, $3, $4, $5)`, "old", w.Tip.Seq, w.Step, w.Pending, w.Head); err != nil {
			t.Fatal(err)
		}
		for j, m := range w.Messages {
			if _, err := pool.Exec(ctx, `INSERT INTO reprompt_messages VALUES ($1, $2, $3, $4)`, "old", gen, w.First+j, m); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := pool.Exec(ctx, `INSERT INTO reprompt_sessions VALUES ($1, $2, $3, $4, $5, false, now())
			ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, step = excluded.step, generation = excluded.generation, messages = excluded.messages`,
			"old", w.Tip.Seq, w.Step, gen, w.Tip.Messages); err != nil {
			t.Fatal(err)
		}
		tip = w.Tip
		cp.Seq = w.Tip.Seq
		c := *cp
		c.Transcript = slices.Clone(cp.Transcript)
		saved = append(saved, &c)
	}
	if _, err := postgres.New(ctx, pool); err != nil {
		t.Fatalf("New on tables from before Base: %v", err)
	}
	st, err := postgres.New(ctx, pool)
	if err != nil {
		t.Fatalf("New again: %v", err)
	}
	var version int
	require.NoError(t, pool.QueryRow(ctx, `SELECT version FROM reprompt_schema`).Scan(&version))
	assert.Equal(t, postgres.SchemaVersion, version, "schema version recorded by the migration")
	for i, want := range saved {
		got, err := st.AtStep(ctx, "old", i+1)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want.Transcript, got.Transcript); diff != "" || got.Seq != want.Seq {
			t.Fatalf("checkpoint %d from before Base: seq %d (-want +got):\n%s", i+1, got.Seq, diff)
		}
	}
	// A new generation with a Base on the old tip.
	prev := len(cp.Transcript)
	cp.Transcript = append(slices.Clone(cp.Transcript[:prev-1]), defs.AssistantMessage("rewritten"))
	cp.Generation, cp.Base, cp.Step = 2, prev-1, 3
	if err := st.Save(ctx, cp); err != nil {
		t.Fatal(err)
	}
	got, err := st.Latest(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(cp.Transcript, got.Transcript); diff != "" {
		t.Fatalf("new generation on old tables (-want +got):\n%s", diff)
	}
	if n, err := st.Rows(ctx, "old"); err != nil || n != 7+9+1 {
		t.Fatalf("Rows = %d, %v; want 17", n, err)
	}
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
