// Package postgres is a session.Store in PostgreSQL, with
// github.com/jackc/pgx/v5. It is a package of its own so that programs
// that do not use it do not depend on pgx.
//
// Each Save is one transaction that locks the session's row, writes the
// checkpoint's head and only the messages not yet stored: those past the
// latest checkpoint's in the same generation, those from the checkpoint's
// Base on in a new generation. Its cost does not grow with the length of
// the session, and a rewrite near the tail (a new generation with a Base)
// costs only the rewritten tail. Loads read in a REPEATABLE READ
// transaction, so a checkpoint and its messages are read from one snapshot.
//
// Tables (created by New if missing, in the connection's search_path):
//
//	reprompt_sessions(id, seq, step, generation, root, messages, done, updated, incarnation, retired)
//	reprompt_checkpoints(session, seq, step, pending, head)
//	reprompt_messages(session, generation, idx, data)
//	reprompt_posts(session, seq, data)          -- messages posted (session.Inbox)
//	reprompt_retired(session, root, first, data) -- retired call ids, one row per Save that adds some
//	reprompt_schema(one, version)               -- one row: SchemaVersion
//
// A checkpoint's message idx is the row of that idx with the highest
// generation from the root of its lineage to its own generation (see
// session.Load).
//
// # Schema versions
//
// The tables are versioned (SchemaVersion, recorded in reprompt_schema).
// Opening a store on tables of the current version only reads that
// version: it runs no DDL, so any number of worker processes may open
// stores while sessions run, with a role that may only read and write the
// tables. Creating or migrating the tables happens once, in one
// transaction under an advisory lock. Tables written before the version
// was recorded are migrated: what earlier versions of this package did not
// create is added (the root column, NULL for tips saved before it, meaning
// root == generation, and an index by idx), so they load unchanged.
// Version 2 added reprompt_posts: a worker's role needs SELECT, INSERT
// and DELETE on it too. Version 3 added reprompt_retired (the same
// rights) and the incarnation and retired columns of reprompt_sessions,
// NULL in rows saved before (incarnation 0, no retired call ids stored
// beside the heads).
//
// # Posted messages
//
// Store implements session.Inbox. A Post is one transaction under an
// advisory lock of its session (not the session's row, so posts do not
// wait for saves), which numbers the post one more than the session's
// last: numbers follow the order of commits, so a reader's cursor never
// skips a post. Posted is one indexed read.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reprompt/reprompt/session"
)

// Store is a session.Store backed by PostgreSQL. It is safe for concurrent
// use, and several processes may share the same tables.
type Store struct {
	pool  *pgxpool.Pool
	owned bool
}

var (
	_ session.Store = (*Store)(nil)
	_ session.Inbox = (*Store)(nil)
)

// SchemaVersion is the version of the tables this package uses, recorded in
// reprompt_schema. Open and New bring tables of an earlier version (or of
// no recorded version: those of the releases before it was recorded) up to
// it, and refuse tables of a later one. Version 2 added reprompt_posts;
// version 3 reprompt_retired and the incarnation and retired columns of
// reprompt_sessions.
const SchemaVersion = 3

// migrations[v] brings tables from version v to v+1. Version 0 is no
// recorded version: no tables, or those of an earlier release, which had
// no root column or no index by idx; its statements are written so that
// they complete either.
var migrations = []string{
	0: `
CREATE TABLE IF NOT EXISTS reprompt_sessions (
	id         TEXT        PRIMARY KEY,
	seq        BIGINT      NOT NULL,
	step       BIGINT      NOT NULL,
	generation BIGINT      NOT NULL,
	messages   BIGINT      NOT NULL,
	done       BOOLEAN     NOT NULL,
	updated    TIMESTAMPTZ NOT NULL
);
CREATE TABLE IF NOT EXISTS reprompt_checkpoints (
	session TEXT   NOT NULL,
	seq     BIGINT NOT NULL,
	step    BIGINT  NOT NULL,
	pending BOOLEAN NOT NULL,
	head    BYTEA   NOT NULL,
	PRIMARY KEY (session, seq)
);
CREATE INDEX IF NOT EXISTS reprompt_checkpoints_by_step ON reprompt_checkpoints (session, step, pending, seq);
CREATE TABLE IF NOT EXISTS reprompt_messages (
	session    TEXT   NOT NULL,
	generation BIGINT NOT NULL,
	idx        BIGINT NOT NULL,
	data       BYTEA  NOT NULL,
	PRIMARY KEY (session, generation, idx)
);
ALTER TABLE reprompt_sessions ADD COLUMN IF NOT EXISTS root BIGINT;
CREATE INDEX IF NOT EXISTS reprompt_messages_by_idx ON reprompt_messages (session, idx, generation DESC);
`,
	1: `
CREATE TABLE IF NOT EXISTS reprompt_posts (
	session TEXT   NOT NULL,
	seq     BIGINT NOT NULL,
	data    BYTEA  NOT NULL,
	PRIMARY KEY (session, seq)
);
`,
	2: `
ALTER TABLE reprompt_sessions ADD COLUMN IF NOT EXISTS incarnation BIGINT;
ALTER TABLE reprompt_sessions ADD COLUMN IF NOT EXISTS retired BIGINT;
CREATE TABLE IF NOT EXISTS reprompt_retired (
	session TEXT   NOT NULL,
	root    BIGINT NOT NULL,
	first   BIGINT NOT NULL,
	data    BYTEA  NOT NULL,
	PRIMARY KEY (session, root, first)
);
`,
}

// schemaLock is the first key of the advisory lock that serializes
// migrations; the second is a hash of the schema, so that migrations of
// tables in different schemas do not wait for each other.
const schemaLock = 0x72657072 // "repr"

// Open connects to the database at url (a PostgreSQL connection string or
// URL) and creates or migrates the tables if needed, as New does. Close
// closes the connections.
func Open(ctx context.Context, url string) (*Store, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("session/postgres: %w", err)
	}
	s, err := New(ctx, pool)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.owned = true
	return s, nil
}

// New returns a store on pool. The pool stays the caller's: Close does not
// close it.
//
// New reads the schema version from reprompt_schema. When it is
// SchemaVersion, New runs no DDL and writes nothing, so opening a store
// takes no lock that running sessions hold, and needs no more rights than
// reading and writing the tables. Otherwise it creates or migrates the
// tables in one transaction under an advisory lock, after locking the
// existing tables in the order Save uses them so that the migration cannot
// deadlock with saves of processes still running. Tables of a later
// version are an error.
func New(ctx context.Context, pool *pgxpool.Pool) (*Store, error) {
	v, err := schemaVersion(ctx, pool)
	if err == nil && v < SchemaVersion {
		err = migrate(ctx, pool)
	} else if err == nil && v > SchemaVersion {
		err = newerSchema(v)
	}
	if err != nil {
		return nil, fmt.Errorf("session/postgres: %w", err)
	}
	return &Store{pool: pool}, nil
}

func newerSchema(v int) error {
	return fmt.Errorf("the tables have schema version %d, and the newest this package knows is %d: a later version of it migrated them", v, SchemaVersion)
}

// querier is a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// schemaVersion reads the recorded schema version, 0 if none.
func schemaVersion(ctx context.Context, q querier) (int, error) {
	var exists bool
	if err := q.QueryRow(ctx, `SELECT to_regclass('reprompt_schema') IS NOT NULL`).Scan(&exists); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	if !exists {
		return 0, nil
	}
	var v int
	switch err := q.QueryRow(ctx, `SELECT version FROM reprompt_schema`).Scan(&v); {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

// migrate brings the tables to SchemaVersion, once: under the advisory
// lock it reads the version again, since another process may have
// migrated in the meantime.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext(coalesce(current_schema(), '')))`, int32(schemaLock)); err != nil {
			return err
		}
		v, err := schemaVersion(ctx, tx)
		if err != nil {
			return err
		}
		if v >= SchemaVersion {
			if v > SchemaVersion {
				return newerSchema(v)
			}
			return nil // another process migrated
		}
		// Save locks reprompt_sessions, then reprompt_checkpoints, then
		// reprompt_messages (and Post reprompt_posts): take them in that
		// order, before any DDL.
		var existing []string
		for _, t := range []string{"reprompt_sessions", "reprompt_checkpoints", "reprompt_messages", "reprompt_posts", "reprompt_retired"} {
			var ok bool
			if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, t).Scan(&ok); err != nil {
				return err
			}
			if ok {
				existing = append(existing, t)
			}
		}
		if len(existing) > 0 {
			if _, err := tx.Exec(ctx, `LOCK TABLE `+strings.Join(existing, ", ")+` IN ACCESS EXCLUSIVE MODE`); err != nil {
				return err
			}
		}
		for ; v < SchemaVersion; v++ {
			if _, err := tx.Exec(ctx, migrations[v]); err != nil {
				return fmt.Errorf("from schema version %d: %w", v, err)
			}
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS reprompt_schema (
			one     BOOLEAN PRIMARY KEY DEFAULT true CHECK (one),
			version INTEGER NOT NULL
		)`); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO reprompt_schema (version) VALUES ($1)
			ON CONFLICT (one) DO UPDATE SET version = excluded.version`, SchemaVersion)
		return err
	})
	if err != nil {
		return fmt.Errorf("migrate tables to schema version %d: %w", SchemaVersion, err)
	}
	return nil
}

// Close closes the connections if Open made them.
func (s *Store) Close() {
	if s.owned {
		s.pool.Close()
	}
}

// Save implements session.Store.
func (s *Store) Save(ctx context.Context, cp *session.Checkpoint) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var seq, incarnation int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// The placeholder row exists only inside this transaction unless it
		// commits; it makes concurrent first saves of one session queue on
		// the row lock.
		if _, err := tx.Exec(ctx, `INSERT INTO reprompt_sessions (id, seq, step, generation, messages, done, updated)
			VALUES ($1, 0, 0, 0, 0, false, now()) ON CONFLICT (id) DO NOTHING`, cp.SessionID); err != nil {
			return fmt.Errorf("session/postgres: save session %q: %w", cp.SessionID, err)
		}
		var tip session.Tip
		if err := tx.QueryRow(ctx, `SELECT seq, generation, coalesce(root, generation), messages, coalesce(incarnation, 0), coalesce(retired, 0)
			FROM reprompt_sessions WHERE id = $1 FOR UPDATE`, cp.SessionID).
			Scan(&tip.Seq, &tip.Generation, &tip.Root, &tip.Messages, &tip.Incarnation, &tip.Retired); err != nil {
			return fmt.Errorf("session/postgres: read session %q: %w", cp.SessionID, err)
		}
		w, err := session.Plan(cp, tip)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO reprompt_checkpoints (session, seq, step, pending, head) VALUES ($1, $2, $3, $4, $5)`,
			cp.SessionID, w.Tip.Seq, w.Step, w.Pending, w.Head); err != nil {
			return fmt.Errorf("session/postgres: save checkpoint: %w", err)
		}
		if len(w.Messages) > 0 {
			if _, err := tx.Exec(ctx, `INSERT INTO reprompt_messages (session, generation, idx, data)
				SELECT $1, $2, $3 + t.i - 1, t.d FROM unnest($4::bytea[]) WITH ORDINALITY AS t(d, i)
				ON CONFLICT (session, generation, idx) DO UPDATE SET data = excluded.data`,
				cp.SessionID, w.Tip.Generation, w.First, w.Messages); err != nil {
				return fmt.Errorf("session/postgres: save messages: %w", err)
			}
		}
		if w.Retired != nil {
			if _, err := tx.Exec(ctx, `DELETE FROM reprompt_retired WHERE session = $1 AND root = $2 AND first >= $3`, cp.SessionID, w.Tip.Root, w.RetiredFirst); err != nil {
				return fmt.Errorf("session/postgres: save retired call ids: %w", err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO reprompt_retired (session, root, first, data) VALUES ($1, $2, $3, $4)`, cp.SessionID, w.Tip.Root, w.RetiredFirst, w.Retired); err != nil {
				return fmt.Errorf("session/postgres: save retired call ids: %w", err)
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE reprompt_sessions SET seq = $2, step = $3, generation = $4, root = $5, messages = $6, done = $7, updated = now(),
			incarnation = $8, retired = $9
			WHERE id = $1`, cp.SessionID, w.Tip.Seq, w.Step, w.Tip.Generation, w.Tip.Root, w.Tip.Messages, w.Done, w.Tip.Incarnation, w.Tip.Retired); err != nil {
			return fmt.Errorf("session/postgres: save session %q: %w", cp.SessionID, err)
		}
		seq, incarnation = w.Tip.Seq, w.Tip.Incarnation
		return nil
	})
	if err != nil {
		return err
	}
	cp.Seq, cp.Incarnation = seq, incarnation
	return nil
}

// Latest implements session.Store.
func (s *Store) Latest(ctx context.Context, id string) (*session.Checkpoint, error) {
	return s.load(ctx, id, `SELECT seq, head FROM reprompt_checkpoints WHERE session = $1 ORDER BY seq DESC LIMIT 1`, id)
}

// AtStep implements session.Store.
func (s *Store) AtStep(ctx context.Context, id string, step int) (*session.Checkpoint, error) {
	cp, err := s.load(ctx, id, `SELECT seq, head FROM reprompt_checkpoints WHERE session = $1 AND step = $2 ORDER BY pending, seq DESC LIMIT 1`, id, step)
	if nf, ok := errors.AsType[*session.NotFoundError](err); ok {
		var one int
		if s.pool.QueryRow(ctx, `SELECT 1 FROM reprompt_sessions WHERE id = $1 AND seq > 0`, id).Scan(&one) == nil {
			nf.Step, nf.AtStep = step, true
		}
	}
	return cp, err
}

func (s *Store) load(ctx context.Context, id, query string, args ...any) (*session.Checkpoint, error) {
	var cp *session.Checkpoint
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var (
			seq  int64
			head []byte
		)
		if err := tx.QueryRow(ctx, query, args...).Scan(&seq, &head); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return &session.NotFoundError{ID: id}
			}
			return fmt.Errorf("session/postgres: load session %q: %w", id, err)
		}
		var err error
		retired := func(root, count int) ([]session.Row, error) {
			rows, err := tx.Query(ctx, `SELECT first, data FROM reprompt_retired WHERE session = $1 AND root = $2 AND first < $3 ORDER BY first`, id, root, count)
			if err != nil {
				return nil, fmt.Errorf("session/postgres: load retired call ids of %q: %w", id, err)
			}
			var out []session.Row
			var r session.Row
			if _, err := pgx.ForEachRow(rows, []any{&r.Index, &r.Data}, func() error {
				out = append(out, r)
				r.Data = nil
				return nil
			}); err != nil {
				return nil, fmt.Errorf("session/postgres: load retired call ids of %q: %w", id, err)
			}
			return out, nil
		}
		cp, err = session.LoadRetired(id, seq, head, func(root, gen, n int) ([]session.Row, error) {
			// Each idx from the newest generation of the lineage that has
			// it (with root == gen, the rows of that generation).
			rows, err := tx.Query(ctx, `SELECT DISTINCT ON (idx) idx, data FROM reprompt_messages
				WHERE session = $1 AND generation BETWEEN $2 AND $3 AND idx < $4
				ORDER BY idx, generation DESC`, id, root, gen, n)
			if err != nil {
				return nil, fmt.Errorf("session/postgres: load messages of %q: %w", id, err)
			}
			out := make([]session.Row, 0, min(n, 1024)) // n comes from the head, which may be damaged
			var r session.Row
			_, err = pgx.ForEachRow(rows, []any{&r.Index, &r.Data}, func() error {
				out = append(out, session.Row{Index: r.Index, Data: r.Data})
				r.Data = nil
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("session/postgres: load messages of %q: %w", id, err)
			}
			return out, nil
		}, retired)
		return err
	})
	if err != nil {
		return nil, err
	}
	return cp, nil
}

// List implements session.Store.
func (s *Store) List(ctx context.Context) ([]session.Info, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, seq, step, generation, coalesce(incarnation, 0), done, updated FROM reprompt_sessions WHERE seq > 0 ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("session/postgres: list: %w", err)
	}
	var out []session.Info
	var in session.Info
	_, err = pgx.ForEachRow(rows, []any{&in.ID, &in.Seq, &in.Step, &in.Generation, &in.Incarnation, &in.Done, &in.Updated}, func() error {
		out = append(out, in)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("session/postgres: list: %w", err)
	}
	return out, nil
}

// Stat implements session.Store.
func (s *Store) Stat(ctx context.Context, id string) (session.Info, error) {
	in := session.Info{ID: id}
	err := s.pool.QueryRow(ctx, `SELECT seq, step, generation, coalesce(incarnation, 0), done, updated FROM reprompt_sessions WHERE id = $1 AND seq > 0`, id).
		Scan(&in.Seq, &in.Step, &in.Generation, &in.Incarnation, &in.Done, &in.Updated)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return session.Info{}, &session.NotFoundError{ID: id}
	case err != nil:
		return session.Info{}, fmt.Errorf("session/postgres: stat %q: %w", id, err)
	}
	return in, nil
}

// Rows returns the number of message rows stored for session id, in all
// its generations (0 for an unknown session). It shows what the session
// costs: a new generation stores only the messages from its Base on.
func (s *Store) Rows(ctx context.Context, id string) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM reprompt_messages WHERE session = $1`, id).Scan(&n); err != nil {
		return 0, fmt.Errorf("session/postgres: count rows of %q: %w", id, err)
	}
	return n, nil
}

// Delete implements session.Store.
func (s *Store) Delete(ctx context.Context, id string) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for _, q := range []string{
			`DELETE FROM reprompt_sessions WHERE id = $1`,
			`DELETE FROM reprompt_checkpoints WHERE session = $1`,
			`DELETE FROM reprompt_messages WHERE session = $1`,
			`DELETE FROM reprompt_posts WHERE session = $1`,
			`DELETE FROM reprompt_retired WHERE session = $1`,
		} {
			if _, err := tx.Exec(ctx, q, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("session/postgres: delete %q: %w", id, err)
	}
	return nil
}
