package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

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
		if err != nil {
			t.Fatal(err)
		}
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

// Damage applies d to session id's latest checkpoint in the database at
// path, through a connection of its own.
func Damage(t *testing.T, path, id string, d sessiontest.Damage) {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var seq int64
	var gen, n int
	if err := db.QueryRow(`SELECT seq, generation, messages FROM sessions WHERE id = ?`, id).Scan(&seq, &gen, &n); err != nil {
		t.Fatal(err)
	}
	if d.OnHead() {
		var head []byte
		if err := db.QueryRow(`SELECT head FROM checkpoints WHERE session = ? AND seq = ?`, id, seq).Scan(&head); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`UPDATE checkpoints SET head = ? WHERE session = ? AND seq = ?`, d.Apply(head), id, seq); err != nil {
			t.Fatal(err)
		}
		return
	}
	if d == sessiontest.DropMessage {
		if _, err := db.Exec(`DELETE FROM messages WHERE session = ? AND generation = ? AND idx = ?`, id, gen, n-1); err != nil {
			t.Fatal(err)
		}
		return
	}
	var data []byte
	if err := db.QueryRow(`SELECT data FROM messages WHERE session = ? AND generation = ? AND idx = ?`, id, gen, n-1).Scan(&data); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE messages SET data = ? WHERE session = ? AND generation = ? AND idx = ?`, d.Apply(data), id, gen, n-1); err != nil {
		t.Fatal(err)
	}
}

// TestReopen checks that a saved session survives closing and reopening the
// file, and that the file is in WAL mode.
func TestReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	st, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	cp := sessiontest.Fixture("durable", 40)
	if err := st.Save(ctx, cp); err != nil {
		t.Fatal(err)
	}
	cp.Transcript = append(cp.Transcript, sessiontest.Messages(40, 2)...)
	cp.Step++
	if err := st.Save(ctx, cp); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err = sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got, err := st.Latest(ctx, "durable")
	if err != nil {
		t.Fatal(err)
	}
	if got.Seq != 2 || len(got.Transcript) != 42 || !reflect.DeepEqual(got.Transcript, cp.Transcript) {
		t.Fatalf("after reopening: seq %d, %d messages", got.Seq, len(got.Transcript))
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mode string
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v; want wal", mode, err)
	}
	var rows int
	if err := db.QueryRow("SELECT count(*) FROM messages WHERE session = 'durable'").Scan(&rows); err != nil || rows != 42 {
		t.Fatalf("%d message rows, %v; want 42 (each message stored once)", rows, err)
	}
}

func TestOpenInvalidPath(t *testing.T) {
	for _, p := range []string{"", "a?b", filepath.Join(t.TempDir(), "missing-dir", "x.db")} {
		if st, err := sqlite.Open(p); err == nil {
			st.Close()
			t.Errorf("Open(%q) succeeded", p)
		}
	}
}
