// Package sqlite is a session.Store in one SQLite file, with the pure-Go
// driver modernc.org/sqlite (no cgo).
//
// The file is opened in WAL mode with synchronous=FULL: a Save that
// returned survives a crash of the process and of the machine, and readers
// do not wait for writers. Each Save is one IMMEDIATE transaction that
// writes the checkpoint's head and only the messages not yet stored: those
// past the latest checkpoint's in the same generation, those from the
// checkpoint's Base on in a new generation. So its cost does not grow with
// the length of the session, and a rewrite near the tail (a new generation
// with a Base) costs only the rewritten tail.
//
// Tables (created by Open if missing):
//
//	sessions(id, seq, step, generation, root, messages, done, updated,
//	         incarnation, retired)                                       -- the tip of each session
//	checkpoints(session, seq, step, pending, head)                      -- one row per Save
//	messages(session, generation, idx, data)                             -- one row per message written
//	posts(session, seq, data)                                            -- one row per message posted (session.Inbox)
//	retired(session, root, first, data)                                  -- retired call ids, one row per Save that adds some
//
// A checkpoint's message idx is the row of that idx with the highest
// generation from the root of its lineage to its own generation (see
// session.Load).
//
// The schema version (SchemaVersion) is recorded in the file's PRAGMA
// user_version. Opening a file of the current version only reads it: no
// schema statement, no write lock, so a process opening the file does not
// wait for others' saves. A file of an earlier version is migrated once, in
// an IMMEDIATE transaction: Open adds what earlier versions of this package
// did not create (the root column, NULL for tips saved before it, meaning
// root == generation, and an index by idx; the posts table, from version 2
// on; the incarnation and retired columns and the retired table, from
// version 3 on), so databases they wrote open and load unchanged. A file of a later version is refused: a
// program built with an earlier version of this package cannot open a
// file that a later one migrated.
//
// # Many writers
//
// One writer at a time holds the file's write lock. A write waits for it
// within Config.LockWait (a minute by default) and then fails with
// ErrBusy, having written nothing. SQLite's own wait, whose intervals
// grow to 100 ms, lets a writer that waited long lose the lock to
// newcomers again and again: with 48 processes saving on one file, saves
// failed after a 10 s wait. So the writers of this package queue first:
// those of one Store in the process, then those of every Store on the
// file on an flock(2) lock of a file beside it, path+"-writer" (made by
// the first write, on systems with flock; where it cannot be made, writers
// wait on SQLite's lock alone). A waiter sleeps until the lock is free,
// and the waiters then race for it afresh, however long each waited. A
// writer that does not queue (another program) is waited for by trying
// SQLite's lock again every few milliseconds.
//
// # Posted messages
//
// Store implements session.Inbox. A Post is one IMMEDIATE transaction,
// like a Save: it numbers the post one more than the session's last, so
// that numbers follow the order of commits and a reader's cursor never
// skips a post. Posted is one indexed read.
package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"time"

	"github.com/reprompt/reprompt/session"

	sqlitedrv "modernc.org/sqlite" // registers the "sqlite" driver
	sqlite3 "modernc.org/sqlite/lib"
)

// Store is a session.Store backed by an SQLite file. It is safe for
// concurrent use, and several processes may open the same file.
type Store struct {
	db       *sql.DB // reads, and migrations
	wdb      *sql.DB // writes (begin)
	path     string
	lockWait time.Duration
	// turn holds a token while one of the store's writes has its turn
	// (see queue); the fields below are the turn holder's.
	turn          chan struct{}
	fileLock      *fileLock
	fileLockOK    bool
	fileLockTried bool
}

var (
	_ session.Store = (*Store)(nil)
	_ session.Inbox = (*Store)(nil)
)

const schema = `
CREATE TABLE IF NOT EXISTS sessions (
	id         TEXT    PRIMARY KEY,
	seq        INTEGER NOT NULL,
	step       INTEGER NOT NULL,
	generation INTEGER NOT NULL,
	root       INTEGER,
	messages   INTEGER NOT NULL,
	done       INTEGER NOT NULL,
	updated    INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS checkpoints (
	session TEXT    NOT NULL,
	seq     INTEGER NOT NULL,
	step    INTEGER NOT NULL,
	pending INTEGER NOT NULL,
	head    BLOB    NOT NULL,
	PRIMARY KEY (session, seq)
);
CREATE INDEX IF NOT EXISTS checkpoints_by_step ON checkpoints (session, step, pending, seq);
CREATE TABLE IF NOT EXISTS messages (
	session    TEXT    NOT NULL,
	generation INTEGER NOT NULL,
	idx        INTEGER NOT NULL,
	data       BLOB    NOT NULL,
	PRIMARY KEY (session, generation, idx)
);
CREATE INDEX IF NOT EXISTS messages_by_idx ON messages (session, idx, generation);
CREATE TABLE IF NOT EXISTS posts (
	session TEXT    NOT NULL,
	seq     INTEGER NOT NULL,
	data    BLOB    NOT NULL,
	PRIMARY KEY (session, seq)
);
CREATE TABLE IF NOT EXISTS retired (
	session TEXT    NOT NULL,
	root    INTEGER NOT NULL,
	first   INTEGER NOT NULL,
	data    BLOB    NOT NULL,
	PRIMARY KEY (session, root, first)
);
`

// SchemaVersion is the version of the tables, recorded in the file's
// PRAGMA user_version. Version 2 added the posts table; version 3 the
// incarnation and retired columns of sessions and the retired table.
const SchemaVersion = 3

// addColumns adds to a sessions table created before them the columns
// that later versions added. Its rows keep NULL: their root is their
// generation, their incarnation 0 and they have no retired call ids
// stored beside their heads.
var addColumns = []struct{ name, add string }{
	{"root", `ALTER TABLE sessions ADD COLUMN root INTEGER`},
	{"incarnation", `ALTER TABLE sessions ADD COLUMN incarnation INTEGER`},
	{"retired", `ALTER TABLE sessions ADD COLUMN retired INTEGER`},
}

// Config configures OpenConfig. The zero Config means the defaults.
type Config struct {
	// LockWait bounds how long a write (Save, Post, Delete) waits for the
	// file's write lock while other connections or processes write (see
	// "Many writers"): until it gets the lock, LockWait passes or its
	// context is done. A write still without the lock then fails with an
	// error matching ErrBusy, having written nothing (a run continues
	// with runtime.Resume). 0 means DefaultLockWait.
	LockWait time.Duration
	// Existing refuses a file that is not a store already (its schema
	// version unset: another program's database, or an empty file), read
	// without writing before anything else: a program that only reads
	// sessions must not make another program's database a store.
	Existing bool
}

// DefaultLockWait is the LockWait of a zero Config: with 48 processes
// saving after every step, reply and result on one file, saves waited
// 3.1 s at most on a loaded 2-core machine (see docs/performance.md).
const DefaultLockWait = time.Minute

// ErrBusy is matched (errors.Is) by the error of a write that did not get
// the file's write lock within Config.LockWait. Nothing was written: the
// write may be tried again.
var ErrBusy = errors.New("session/sqlite: database is locked by other writers")

// lockPoll bounds the time SQLite itself waits for the write lock before
// the store's own wait (Store.begin) tries again: SQLite's busy handler
// sleeps longer and longer (up to 100 ms), so that a writer that waited
// long checks the lock less often than one that just arrived.
const lockPoll = 3 // milliseconds

// Open opens (creating if needed) the SQLite database at path and its
// tables, with the defaults (a zero Config). Close it when done.
func Open(path string) (*Store, error) { return OpenConfig(path, Config{}) }

// OpenConfig opens (creating if needed) the SQLite database at path and
// its tables, as cfg says. Close it when done.
func OpenConfig(path string, cfg Config) (*Store, error) {
	if path == "" || strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("session/sqlite: invalid database path %q", path)
	}
	if cfg.LockWait < 0 {
		return nil, fmt.Errorf("session/sqlite: negative LockWait %v", cfg.LockWait)
	}
	if cfg.Existing {
		if err := existing(path); err != nil {
			return nil, err
		}
	}
	wait := cmp.Or(cfg.LockWait, DefaultLockWait)
	// Reads wait for SQLite's locks as long as writes do (they seldom
	// wait, in WAL mode); writes take the write lock in begin.
	pragmas := "&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"
	db, err := sql.Open("sqlite", fmt.Sprintf("%s?_pragma=busy_timeout(%d)%s", path, wait.Milliseconds(), pragmas))
	if err != nil {
		return nil, fmt.Errorf("session/sqlite: open %s: %w", path, err)
	}
	wdb, err := sql.Open("sqlite", fmt.Sprintf("%s?_pragma=busy_timeout(%d)%s", path, lockPoll, pragmas))
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("session/sqlite: open %s: %w", path, err)
	}
	if err := migrate(db); err != nil {
		db.Close()
		wdb.Close()
		return nil, fmt.Errorf("session/sqlite: create tables in %s: %w", path, err)
	}
	return &Store{db: db, wdb: wdb, path: path, lockWait: wait, turn: make(chan struct{}, 1)}, nil
}

// existing reports an error unless the file at path is a store, opened
// read-only: the pragmas of OpenConfig's connections (WAL mode) would
// change it.
func existing(path string) error {
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?mode=ro")
	if err != nil {
		return fmt.Errorf("session/sqlite: open %s: %w", path, err)
	}
	defer db.Close()
	var v int
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil {
		return fmt.Errorf("session/sqlite: read %s: %w", path, err)
	}
	if v == 0 {
		return fmt.Errorf("session/sqlite: %s is not a session store: it has no schema version (another program's database, or an empty file)", path)
	}
	return nil
}

// begin returns a connection of the writers' pool in an IMMEDIATE
// transaction: it holds the file's write lock. It waits for the lock as
// Config.LockWait says: first in the queue of the store's writers, then
// in that of the file's (see fileLock), where a waiter sleeps until the
// lock is free, and then for SQLite's lock itself, which a writer that
// does not queue (another program) may hold: that it tries again every
// few milliseconds, at random. Call done when the transaction is
// committed or is to be rolled back.
func (s *Store) begin(ctx context.Context) (conn *sql.Conn, done func(commit bool) error, err error) {
	deadline := time.Now().Add(s.lockWait)
	unlock, err := s.queue(ctx, deadline)
	if err != nil {
		return nil, nil, err
	}
	conn, err = s.wdb.Conn(ctx)
	if err != nil {
		unlock()
		return nil, nil, fmt.Errorf("session/sqlite: %w", err)
	}
	fail := func(err error) (*sql.Conn, func(bool) error, error) {
		conn.Close()
		unlock()
		return nil, nil, err
	}
	for {
		_, err = conn.ExecContext(ctx, "BEGIN IMMEDIATE")
		if err == nil {
			break
		}
		if !busy(err) {
			return fail(fmt.Errorf("session/sqlite: begin: %w", err))
		}
		if !time.Now().Before(deadline) {
			return fail(fmt.Errorf("%w (waited %v, Config.LockWait): %w", ErrBusy, s.lockWait, err))
		}
		t := time.NewTimer(time.Duration(500+rand.Int64N(3500)) * time.Microsecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fail(ctx.Err())
		case <-t.C:
		}
	}
	return conn, func(commit bool) error {
		defer unlock()
		defer conn.Close()
		if commit {
			if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
				_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
				return fmt.Errorf("session/sqlite: commit: %w", err)
			}
			return nil
		}
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		return nil
	}, nil
}

// queue waits, until deadline, for the turn of this store's writer: for
// the store's other writers, then for the file lock that the writers of
// every store on the file queue on. It returns the function that ends
// the turn.
func (s *Store) queue(ctx context.Context, deadline time.Time) (unlock func(), err error) {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	busyErr := func() error { return fmt.Errorf("%w (waited %v, Config.LockWait)", ErrBusy, s.lockWait) }
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
		return nil, busyErr()
	}
	if !s.fileLockTried {
		s.fileLock, s.fileLockOK = openFileLock(s.path)
		s.fileLockTried = true
	}
	if !s.fileLockOK {
		return func() { <-s.turn }, nil
	}
	got := make(chan error, 1)
	go func() { got <- s.fileLock.lock() }()
	select {
	case err := <-got:
		if err != nil { // no flock on this file system: SQLite's lock alone
			return func() { <-s.turn }, nil
		}
		return func() {
			_ = s.fileLock.unlock()
			<-s.turn
		}, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-t.C:
		err = busyErr()
	}
	go func() { // the turn ends once the lock, if it comes, is let go
		if <-got == nil {
			_ = s.fileLock.unlock()
		}
		<-s.turn
	}()
	return nil, err
}

// busy reports whether err is SQLite's SQLITE_BUSY (of any extended code).
func busy(err error) bool {
	var se *sqlitedrv.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

// migrate creates the tables, or brings those of an earlier version up to
// date. A file whose PRAGMA user_version is SchemaVersion is only read:
// opening it takes no write lock, so it does not wait for running saves.
// Otherwise the migration runs in one IMMEDIATE transaction, which reads
// the version again so that processes opening the same file at once
// migrate it once. Files written before the version was recorded (version
// 0) get what they lack (the root column), files of version 1 the posts
// table and files of version 2 the incarnation and retired columns and
// the retired table (every statement of schema completes on tables that
// exist); a later version is an error.
func migrate(db *sql.DB) error {
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	version := func() (int, error) {
		var v int
		err := conn.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v)
		if err == nil && v > SchemaVersion {
			err = fmt.Errorf("the file has schema version %d, and the newest this package knows is %d: a later version of it migrated the file", v, SchemaVersion)
		}
		return v, err
	}
	if v, err := version(); err != nil || v == SchemaVersion {
		return err
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	committed := false
	defer func() {
		if !committed {
			_, _ = conn.ExecContext(ctx, "ROLLBACK")
		}
	}()
	v, err := version()
	if err != nil || v == SchemaVersion {
		return err // nil: another process migrated
	}
	if _, err := conn.ExecContext(ctx, schema); err != nil {
		return err
	}
	for _, c := range addColumns {
		var has int
		if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('sessions') WHERE name = ?`, c.name).Scan(&has); err != nil {
			return err
		}
		if has == 0 {
			if _, err := conn.ExecContext(ctx, c.add); err != nil {
				return err
			}
		}
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, SchemaVersion)); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return err
	}
	committed = true
	return nil
}

// Close closes the database. Writes under way when it is called fail.
func (s *Store) Close() error {
	err := errors.Join(s.db.Close(), s.wdb.Close())
	select {
	case s.turn <- struct{}{}: // no write has its turn: the file lock is s's
		if s.fileLockOK {
			err = errors.Join(err, s.fileLock.close())
		}
	default: // the write that has its turn, or waits for the lock, lets it go
	}
	return err
}

// Save implements session.Store.
func (s *Store) Save(ctx context.Context, cp *session.Checkpoint) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	conn, done, err := s.begin(ctx)
	if err != nil {
		return err
	}
	committed := false
	defer func() {
		if !committed {
			_ = done(false)
		}
	}()

	var tip session.Tip
	err = conn.QueryRowContext(ctx, `SELECT seq, generation, coalesce(root, generation), messages, coalesce(incarnation, 0), coalesce(retired, 0) FROM sessions WHERE id = ?`, cp.SessionID).
		Scan(&tip.Seq, &tip.Generation, &tip.Root, &tip.Messages, &tip.Incarnation, &tip.Retired)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("session/sqlite: read session %q: %w", cp.SessionID, err)
	}
	w, err := session.Plan(cp, tip)
	if err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, `INSERT INTO checkpoints (session, seq, step, pending, head) VALUES (?, ?, ?, ?, ?)`,
		cp.SessionID, w.Tip.Seq, w.Step, w.Pending, w.Head); err != nil {
		return fmt.Errorf("session/sqlite: save checkpoint: %w", err)
	}
	if err := insertMessages(ctx, conn, cp.SessionID, w); err != nil {
		return err
	}
	if w.Retired != nil {
		if _, err := conn.ExecContext(ctx, `DELETE FROM retired WHERE session = ? AND root = ? AND first >= ?`, cp.SessionID, w.Tip.Root, w.RetiredFirst); err != nil {
			return fmt.Errorf("session/sqlite: save retired call ids: %w", err)
		}
		if _, err := conn.ExecContext(ctx, `INSERT INTO retired (session, root, first, data) VALUES (?, ?, ?, ?)`, cp.SessionID, w.Tip.Root, w.RetiredFirst, w.Retired); err != nil {
			return fmt.Errorf("session/sqlite: save retired call ids: %w", err)
		}
	}
	if _, err := conn.ExecContext(ctx, `INSERT INTO sessions (id, seq, step, generation, root, messages, done, updated, incarnation, retired)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, step = excluded.step, generation = excluded.generation,
			root = excluded.root, messages = excluded.messages, done = excluded.done, updated = excluded.updated,
			incarnation = excluded.incarnation, retired = excluded.retired`,
		cp.SessionID, w.Tip.Seq, w.Step, w.Tip.Generation, w.Tip.Root, w.Tip.Messages, w.Done, time.Now().UnixNano(), w.Tip.Incarnation, w.Tip.Retired); err != nil {
		return fmt.Errorf("session/sqlite: save session %q: %w", cp.SessionID, err)
	}
	committed = true
	if err := done(true); err != nil {
		return err
	}
	cp.Seq, cp.Incarnation = w.Tip.Seq, w.Tip.Incarnation
	return nil
}

// rowsPerInsert bounds the rows of one multi-row INSERT (4 parameters each;
// SQLite allows 32766 parameters).
const rowsPerInsert = 256

func insertMessages(ctx context.Context, conn *sql.Conn, id string, w *session.Write) error {
	for start := 0; start < len(w.Messages); start += rowsPerInsert {
		chunk := w.Messages[start:min(start+rowsPerInsert, len(w.Messages))]
		var q strings.Builder
		q.WriteString(`INSERT OR REPLACE INTO messages (session, generation, idx, data) VALUES `)
		args := make([]any, 0, 4*len(chunk))
		for i, data := range chunk {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?)")
			args = append(args, id, w.Tip.Generation, w.First+start+i, data)
		}
		if _, err := conn.ExecContext(ctx, q.String(), args...); err != nil {
			return fmt.Errorf("session/sqlite: save messages: %w", err)
		}
	}
	return nil
}

// Latest implements session.Store.
func (s *Store) Latest(ctx context.Context, id string) (*session.Checkpoint, error) {
	return s.load(ctx, id, `SELECT seq, head FROM checkpoints WHERE session = ? ORDER BY seq DESC LIMIT 1`, id)
}

// AtStep implements session.Store.
func (s *Store) AtStep(ctx context.Context, id string, step int) (*session.Checkpoint, error) {
	cp, err := s.load(ctx, id, `SELECT seq, head FROM checkpoints WHERE session = ? AND step = ? ORDER BY pending, seq DESC LIMIT 1`, id, step)
	if nf, ok := errors.AsType[*session.NotFoundError](err); ok {
		var one int
		if s.db.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE id = ?`, id).Scan(&one) == nil {
			nf.Step, nf.AtStep = step, true
		}
	}
	return cp, err
}

func (s *Store) load(ctx context.Context, id, query string, args ...any) (*session.Checkpoint, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("session/sqlite: %w", err)
	}
	defer tx.Rollback()
	var (
		seq  int64
		head []byte
	)
	if err := tx.QueryRowContext(ctx, query, args...).Scan(&seq, &head); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, &session.NotFoundError{ID: id}
		}
		return nil, fmt.Errorf("session/sqlite: load session %q: %w", id, err)
	}
	retired := func(root, count int) ([]session.Row, error) {
		return retiredChunks(ctx, tx, id, root, count)
	}
	return session.LoadRetired(id, seq, head, func(root, gen, n int) ([]session.Row, error) {
		var (
			rows *sql.Rows
			err  error
		)
		if root == gen {
			rows, err = tx.QueryContext(ctx, `SELECT idx, data FROM messages WHERE session = ? AND generation = ? AND idx < ? ORDER BY idx`, id, gen, n)
		} else {
			// Each idx from the newest generation of the lineage that has it.
			rows, err = tx.QueryContext(ctx, `SELECT m.idx, m.data FROM messages m
				WHERE m.session = ?1 AND m.generation BETWEEN ?2 AND ?3 AND m.idx < ?4
				AND m.generation = (SELECT max(n.generation) FROM messages n
					WHERE n.session = ?1 AND n.idx = m.idx AND n.generation BETWEEN ?2 AND ?3)
				ORDER BY m.idx`, id, root, gen, n)
		}
		if err != nil {
			return nil, fmt.Errorf("session/sqlite: load messages of %q: %w", id, err)
		}
		defer rows.Close()
		out := make([]session.Row, 0, min(n, 1024)) // n comes from the head, which may be damaged
		for rows.Next() {
			var r session.Row
			if err := rows.Scan(&r.Index, &r.Data); err != nil {
				return nil, fmt.Errorf("session/sqlite: load messages of %q: %w", id, err)
			}
			out = append(out, r)
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("session/sqlite: load messages of %q: %w", id, err)
		}
		return out, nil
	}, retired)
}

// retiredChunks returns the chunks of retired call ids of root in session
// id with a first index below count, in order.
func retiredChunks(ctx context.Context, tx *sql.Tx, id string, root, count int) ([]session.Row, error) {
	rows, err := tx.QueryContext(ctx, `SELECT first, data FROM retired WHERE session = ? AND root = ? AND first < ? ORDER BY first`, id, root, count)
	if err != nil {
		return nil, fmt.Errorf("session/sqlite: load retired call ids of %q: %w", id, err)
	}
	defer rows.Close()
	var out []session.Row
	for rows.Next() {
		var r session.Row
		if err := rows.Scan(&r.Index, &r.Data); err != nil {
			return nil, fmt.Errorf("session/sqlite: load retired call ids of %q: %w", id, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("session/sqlite: load retired call ids of %q: %w", id, err)
	}
	return out, nil
}

// List implements session.Store.
func (s *Store) List(ctx context.Context) ([]session.Info, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, seq, step, generation, coalesce(incarnation, 0), done, updated FROM sessions ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("session/sqlite: list: %w", err)
	}
	defer rows.Close()
	var out []session.Info
	for rows.Next() {
		var (
			in      session.Info
			updated int64
		)
		if err := rows.Scan(&in.ID, &in.Seq, &in.Step, &in.Generation, &in.Incarnation, &in.Done, &updated); err != nil {
			return nil, fmt.Errorf("session/sqlite: list: %w", err)
		}
		in.Updated = time.Unix(0, updated)
		out = append(out, in)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("session/sqlite: list: %w", err)
	}
	return out, nil
}

// Stat implements session.Store.
func (s *Store) Stat(ctx context.Context, id string) (session.Info, error) {
	in := session.Info{ID: id}
	var updated int64
	err := s.db.QueryRowContext(ctx, `SELECT seq, step, generation, coalesce(incarnation, 0), done, updated FROM sessions WHERE id = ?`, id).
		Scan(&in.Seq, &in.Step, &in.Generation, &in.Incarnation, &in.Done, &updated)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return session.Info{}, &session.NotFoundError{ID: id}
	case err != nil:
		return session.Info{}, fmt.Errorf("session/sqlite: stat %q: %w", id, err)
	}
	in.Updated = time.Unix(0, updated)
	return in, nil
}

// Rows returns the number of message rows stored for session id, in all
// its generations (0 for an unknown session). It shows what the session
// costs: a new generation stores only the messages from its Base on.
func (s *Store) Rows(ctx context.Context, id string) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM messages WHERE session = ?`, id).Scan(&n); err != nil {
		return 0, fmt.Errorf("session/sqlite: count rows of %q: %w", id, err)
	}
	return n, nil
}

// Delete implements session.Store.
func (s *Store) Delete(ctx context.Context, id string) error {
	conn, done, err := s.begin(ctx)
	if err != nil {
		return err
	}
	for _, q := range []string{
		`DELETE FROM sessions WHERE id = ?`,
		`DELETE FROM checkpoints WHERE session = ?`,
		`DELETE FROM messages WHERE session = ?`,
		`DELETE FROM posts WHERE session = ?`,
		`DELETE FROM retired WHERE session = ?`,
	} {
		if _, err := conn.ExecContext(ctx, q, id); err != nil {
			_ = done(false)
			return fmt.Errorf("session/sqlite: delete %q: %w", id, err)
		}
	}
	if err := done(true); err != nil {
		return fmt.Errorf("session/sqlite: delete %q: %w", id, err)
	}
	return nil
}
