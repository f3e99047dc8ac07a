package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/session/postgres"
	"github.com/reprompt/reprompt/session/sessiontest"
)

// withParam returns url with one more query parameter.
func withParam(url, key, value string) string {
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + key + "=" + value
}

// saveRun saves a session of steps checkpoints, two messages more each
// time, as a run does.
func saveRun(ctx context.Context, st session.Store, id string, steps int) error {
	cp := sessiontest.Fixture(id, 2)
	cp.Pending = nil
	for step := range steps {
		cp.Step = step
		cp.Transcript = append(cp.Transcript, sessiontest.Messages(len(cp.Transcript), 2)...)
		if err := st.Save(ctx, cp); err != nil {
			return fmt.Errorf("run %s, step %d: %w", id, step, err)
		}
	}
	return nil
}

// TestOpenDuringSaves opens the store again and again, from many
// goroutines, each with its own pool, and from a second process, while many
// runs save: no Open and no Save may fail. Every Open used to run the
// schema's DDL, which took its locks in the opposite order from Save: with
// 15 Opens during 16 runs, 14 runs failed with "deadlock detected".
func TestOpenDuringSaves(t *testing.T) {
	pool, schema := newSchema(t)
	ctx := context.Background()
	url := withParam(os.Getenv("REPROMPT_PG_URL"), "search_path", schema)
	st, err := postgres.Open(ctx, withParam(url, "pool_max_conns", "16"))
	require.NoError(t, err)
	defer st.Close()
	_ = pool

	const runs, steps, openers, opens = 16, 20, 15, 4
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	// A second process opens the store and saves a run of its own.
	child := exec.Command(os.Args[0], "-test.run=^TestHelperOpenProcess$", "-test.count=1")
	child.Env = append(os.Environ(), "REPROMPT_PG_HELPER_URL="+url)
	var childOut strings.Builder
	child.Stdout, child.Stderr = &childOut, &childOut
	require.NoError(t, child.Start())

	for i := range runs {
		wg.Go(func() {
			if err := saveRun(ctx, st, fmt.Sprint("run-", i), steps); err != nil {
				fail(err)
			}
		})
	}
	for i := range openers {
		wg.Go(func() {
			for k := range opens {
				o, err := postgres.Open(ctx, withParam(url, "pool_max_conns", "2"))
				if err != nil {
					fail(fmt.Errorf("opener %d, open %d: %w", i, k, err))
					continue
				}
				if _, err := o.Stat(ctx, "run-0"); err != nil && !errors.Is(err, session.ErrNotFound) {
					fail(fmt.Errorf("opener %d, open %d: stat: %w", i, k, err))
				}
				o.Close()
			}
		})
	}
	wg.Wait()
	childErr := child.Wait()
	assert.NoError(t, childErr, "second process:\n%s", childOut.String())
	require.Empty(t, errs, "%d failures", len(errs))
	for i := range runs {
		cp, err := st.Latest(ctx, fmt.Sprint("run-", i))
		require.NoError(t, err)
		assert.Len(t, cp.Transcript, 2+2*steps)
	}
	cp, err := st.Latest(ctx, "child")
	require.NoError(t, err)
	assert.Len(t, cp.Transcript, 2+2*steps)
}

// TestHelperOpenProcess is the second process of TestOpenDuringSaves: it
// runs only when that test starts it (REPROMPT_PG_HELPER_URL set), opens
// the store repeatedly and saves a run of its own.
func TestHelperOpenProcess(t *testing.T) {
	url := os.Getenv("REPROMPT_PG_HELPER_URL")
	if url == "" {
		t.Skip("the second process of TestOpenDuringSaves")
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	wg.Go(func() {
		st, err := postgres.Open(ctx, url)
		if !assert.NoError(t, err) {
			return
		}
		defer st.Close()
		assert.NoError(t, saveRun(ctx, st, "child", 20))
	})
	for k := range 10 {
		st, err := postgres.Open(ctx, withParam(url, "pool_max_conns", "1"))
		if !assert.NoError(t, err, "open %d", k) {
			continue
		}
		st.Close()
	}
	wg.Wait()
}

// TestConcurrentFirstOpen opens an empty schema from many pools at once:
// one creates the tables, under the advisory lock, and every Open succeeds.
func TestConcurrentFirstOpen(t *testing.T) {
	pool, schema := newSchema(t)
	ctx := context.Background()
	url := withParam(os.Getenv("REPROMPT_PG_URL"), "search_path", schema)
	var wg sync.WaitGroup
	errs := make([]error, 12)
	for i := range errs {
		wg.Go(func() {
			st, err := postgres.Open(ctx, withParam(url, "pool_max_conns", "2"))
			if err == nil {
				err = saveRun(ctx, st, fmt.Sprint("first-", i), 3)
				st.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		assert.NoError(t, err, "open %d", i)
	}
	var version, rows int
	require.NoError(t, pool.QueryRow(ctx, `SELECT max(version), count(*) FROM reprompt_schema`).Scan(&version, &rows))
	assert.Equal(t, postgres.SchemaVersion, version)
	assert.Equal(t, 1, rows, "rows of reprompt_schema")
}

// TestOpenRunsNoDDL opens an up-to-date schema as a role that may read and
// write the tables but not create, alter or own anything, and may only
// read the version table: so Open executes no DDL and writes nothing.
func TestOpenRunsNoDDL(t *testing.T) {
	pool, schema := newSchema(t)
	ctx := context.Background()
	_, err := postgres.New(ctx, pool)
	require.NoError(t, err)

	role := "reprompt_worker_" + strings.TrimPrefix(schema, "reprompt_test_")
	for _, q := range []string{
		`CREATE ROLE ` + role + ` LOGIN`,
		`GRANT USAGE ON SCHEMA ` + schema + ` TO ` + role,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON reprompt_sessions, reprompt_checkpoints, reprompt_messages, reprompt_posts TO ` + role,
		`GRANT SELECT ON reprompt_schema TO ` + role,
	} {
		_, err := pool.Exec(ctx, q)
		require.NoError(t, err, q)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), os.Getenv("REPROMPT_PG_URL"))
		if err == nil {
			c.Exec(context.Background(), "DROP OWNED BY "+role)
			c.Exec(context.Background(), "DROP ROLE "+role)
			c.Close(context.Background())
		}
	})
	cfg, err := pgx.ParseConfig(os.Getenv("REPROMPT_PG_URL"))
	require.NoError(t, err)
	url := fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable&search_path=%s", role, cfg.Host, cfg.Port, cfg.Database, schema)

	// The role cannot run DDL: the check cannot pass by accident.
	c, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	_, err = c.Exec(ctx, `CREATE TABLE IF NOT EXISTS reprompt_sessions (id TEXT)`)
	assert.Error(t, err, "the role may create tables")
	c.Close(ctx)

	for k := range 3 {
		st, err := postgres.Open(ctx, url)
		require.NoError(t, err, "open %d of an up-to-date schema as a role without DDL rights", k)
		require.NoError(t, saveRun(ctx, st, fmt.Sprint("worker-", k), 2))
		st.Close()
	}
}

// TestSchemaNewerThanPackage checks that tables migrated by a later version
// of this package are refused with an error naming both versions.
func TestSchemaNewerThanPackage(t *testing.T) {
	pool := newPool(t)
	ctx := context.Background()
	_, err := postgres.New(ctx, pool)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE reprompt_schema SET version = $1`, postgres.SchemaVersion+1)
	require.NoError(t, err)
	start := time.Now()
	_, err = postgres.New(ctx, pool)
	require.Error(t, err)
	// The error is untyped: both versions are only in the text.
	assert.Contains(t, err.Error(), fmt.Sprintf("schema version %d", postgres.SchemaVersion+1))
	assert.Contains(t, err.Error(), fmt.Sprintf("newest this package knows is %d", postgres.SchemaVersion))
	assert.Less(t, time.Since(start), 5*time.Second)
}

// oldSave is a Save as the release before the schema version wrote it (no
// root column), taking its locks in the same order: the row of
// reprompt_sessions, then reprompt_checkpoints, then reprompt_messages.
func oldSave(ctx context.Context, pool *pgxpool.Pool, id string, seq int64) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO reprompt_sessions (id, seq, step, generation, messages, done, updated)
			VALUES ($1, 0, 0, 0, 0, false, now()) ON CONFLICT (id) DO NOTHING`, id); err != nil {
			return err
		}
		var cur int64
		if err := tx.QueryRow(ctx, `SELECT seq FROM reprompt_sessions WHERE id = $1 FOR UPDATE`, id).Scan(&cur); err != nil {
			return err
		}
		cp := sessiontest.Fixture(id, int(2*seq))
		cp.Pending, cp.Step, cp.Seq = nil, int(seq), seq-1
		w, err := session.Plan(cp, session.Tip{Seq: seq - 1, Messages: int(2*seq - 2)})
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO reprompt_checkpoints (session, seq, step, pending, head) VALUES ($1, $2, $3, false, $4)`,
			id, seq, w.Step, w.Head); err != nil {
			return err
		}
		for j, m := range w.Messages {
			if _, err := tx.Exec(ctx, `INSERT INTO reprompt_messages (session, generation, idx, data) VALUES ($1, 0, $2, $3)`,
				id, int(2*seq-2)+j, m); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `UPDATE reprompt_sessions SET seq = $2, step = $2, messages = $3, updated = now() WHERE id = $1`, id, seq, 2*seq)
		return err
	})
}

// TestMigrateDuringOldSaves migrates tables of the release before the
// schema version, from several pools at once, while processes of that
// release keep saving: the migration locks the tables in Save's order, so
// no save and no Open fails, and the sessions saved load afterwards.
func TestMigrateDuringOldSaves(t *testing.T) {
	pool, schema := newSchema(t)
	ctx := context.Background()
	_, err := pool.Exec(ctx, oldSchema)
	require.NoError(t, err)
	url := withParam(os.Getenv("REPROMPT_PG_URL"), "search_path", schema)

	const savers, saves = 8, 15
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	start := make(chan struct{})
	for i := range savers {
		wg.Go(func() {
			<-start
			for seq := int64(1); seq <= saves; seq++ {
				if err := oldSave(ctx, pool, fmt.Sprint("old-", i), seq); err != nil {
					fail(fmt.Errorf("old save %d of old-%d: %w", seq, i, err))
				}
			}
		})
	}
	for i := range 6 {
		wg.Go(func() {
			<-start
			time.Sleep(time.Duration(i) * 20 * time.Millisecond)
			st, err := postgres.Open(ctx, withParam(url, "pool_max_conns", "2"))
			if err != nil {
				fail(fmt.Errorf("open %d: %w", i, err))
				return
			}
			st.Close()
		})
	}
	close(start)
	wg.Wait()
	require.Empty(t, errs, "%d failures", len(errs))
	st, err := postgres.New(ctx, pool)
	require.NoError(t, err)
	for i := range savers {
		cp, err := st.Latest(ctx, fmt.Sprint("old-", i))
		require.NoError(t, err)
		assert.Len(t, cp.Transcript, 2*saves)
	}
}
