package sqlite_test

import (
	"database/sql"
	"path/filepath"
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
