package viewer_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/cmd/reprompt/internal/showtext"
	"github.com/reprompt/reprompt/cmd/reprompt/internal/viewer"
	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/internal/pgtest"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/session/postgres"
	"github.com/reprompt/reprompt/session/sqlite"
	"github.com/reprompt/reprompt/snapshots"
)

// stepStore is a store read one step at a time: it hides the store's
// session.StepReader, as a store without one has none, so FromStore calls
// AtStep for each step (the path of stores without AtSteps).
type stepStore struct{ session.Store }

// countingStore counts the calls of AtStep of a store that keeps its
// session.StepReader.
type countingStore struct {
	session.Store
	atStep atomic.Int64
}

func (c *countingStore) AtStep(ctx context.Context, id string, step int) (*session.Checkpoint, error) {
	c.atStep.Add(1)
	return c.Store.AtStep(ctx, id, step)
}

func (c *countingStore) AtSteps(ctx context.Context, id string, first, last int) iter.Seq2[*session.Checkpoint, error] {
	return c.Store.(session.StepReader).AtSteps(ctx, id, first, last)
}

// viewSessions saves into st, under ids starting with prefix, the sessions
// that TestOnePassSameView reads: a run with a compaction and a sub-agent,
// rewound to its step 2 and run again to the end; a run interrupted in the
// middle of a step; and a run without step records. It returns their ids.
func viewSessions(t *testing.T, st session.Store, prefix string) []string {
	ctx := t.Context()
	rewound := prefix + "rewound"
	_, err := runtime.Run(ctx, script(), agent, runtime.Config{Store: st, SessionID: rewound})
	require.NoError(t, err)
	cp, err := session.Rewind(ctx, st, rewound, 2)
	require.NoError(t, err)
	require.NoError(t, st.Save(ctx, cp))
	r, err := runtime.Resume(ctx, snapshots.Script(
		snapshots.CallTool("add", nil),
		snapshots.CallTool("researcher", map[string]string{"task": "find Y"}),
		snapshots.Text("Y is 7."),
	).Agent("researcher", snapshots.Text("7")), agent, runtime.Config{Store: st, SessionID: rewound})
	require.NoError(t, err)
	_, err = r.Run(ctx)
	require.NoError(t, err)

	pending := prefix + "pending"
	_, err = runtime.Run(ctx, script(), agent, runtime.Config{Store: st, SessionID: pending, MaxSteps: 3})
	require.ErrorIs(t, err, runtime.ErrMaxSteps)
	cp, err = st.Latest(ctx, pending)
	require.NoError(t, err)
	cp.Done, cp.Record = false, nil
	cp.Pending = &session.Pending{Reply: defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: "c9", Name: "add", Arguments: []byte(`{}`)}}}}
	require.NoError(t, st.Save(ctx, cp))

	old := prefix + "old"
	_, err = runtime.Run(ctx, script(), agent, runtime.Config{Store: &stripRecords{Store: st}, SessionID: old})
	require.NoError(t, err)
	return []string{rewound, pending, old}
}

// sameView checks that FromStore reads session id from st in one pass
// (no AtStep call) and shows it, as text and as HTML, exactly as it does
// reading one step at a time; it returns the run's error.
func sameView(t *testing.T, st session.Store, id string) error {
	t.Helper()
	ctx := t.Context()
	old, oldErr := viewer.FromStore(ctx, stepStore{st}, id)
	counting := &countingStore{Store: st}
	run, err := viewer.FromStore(ctx, counting, id)
	assert.Zero(t, counting.atStep.Load(), "%s: FromStore called AtStep of a store with AtSteps", id)
	if oldErr != nil || err != nil {
		require.Equal(t, oldErr == nil, err == nil, "%s: errors %v and %v", id, oldErr, err)
		require.Equal(t, oldErr.Error(), err.Error(), id)
	}
	require.NotNil(t, run, id)
	for _, show := range []struct {
		name string
		fn   func(*bytes.Buffer, *viewer.Run) error
	}{
		{"text", func(b *bytes.Buffer, r *viewer.Run) error { return showtext.Write(b, r, showtext.Options{Width: -1}) }},
		{"HTML", func(b *bytes.Buffer, r *viewer.Run) error { return viewer.HTML(b, r) }},
	} {
		var want, got bytes.Buffer
		require.NoError(t, show.fn(&want, old))
		require.NoError(t, show.fn(&got, run))
		require.Positive(t, want.Len())
		// The views are long: report their first differing line only.
		assert.True(t, want.String() == got.String(), "%s: the %s read in one pass differs from the one read step by step:\n%s", id, show.name, firstLineDiff(want.String(), got.String()))
	}
	return err
}

func firstLineDiff(want, got string) string {
	wl, gl := bytes.Split([]byte(want), []byte("\n")), bytes.Split([]byte(got), []byte("\n"))
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g []byte
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if !bytes.Equal(w, g) {
			return fmt.Sprintf("line %d:\n-%s\n+%s", i+1, w, g)
		}
	}
	return "(same lines)"
}

// TestOnePassSameView reads sessions with compactions, a rewind, sub-agents,
// a pending step, checkpoints without records and damaged checkpoints in
// one pass (session.StepReader) and one step at a time (AtStep), from the
// memory, SQLite and (with REPROMPT_PG_URL) PostgreSQL stores: the text and
// the HTML shown are the same.
func TestOnePassSameView(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		st := session.NewMemory()
		for _, id := range viewSessions(t, st, "") {
			require.NoError(t, sameView(t, st, id))
		}
	})
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "s.db")
		st, err := sqlite.Open(path)
		require.NoError(t, err)
		defer st.Close()
		ids := viewSessions(t, st, "")
		for _, id := range ids {
			require.NoError(t, sameView(t, st, id))
		}
		db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
		require.NoError(t, err)
		defer db.Close()
		damaged(t, st, ids[0], func(q string, args ...any) {
			_, err := db.ExecContext(t.Context(), q, args...)
			require.NoError(t, err)
		}, "UPDATE messages SET data = ? WHERE session = ? AND generation = ? AND idx = ?",
			"UPDATE checkpoints SET head = ? WHERE session = ? AND seq = ?")
	})
	t.Run("postgres", func(t *testing.T) {
		url := pgtest.URL(t)
		st, err := postgres.Open(t.Context(), url)
		require.NoError(t, err)
		defer st.Close()
		prefix := pgtest.Name("viewer-") + "-"
		ids := viewSessions(t, st, prefix)
		t.Cleanup(func() {
			for _, id := range ids {
				_ = st.Delete(context.Background(), id)
			}
		})
		for _, id := range ids {
			require.NoError(t, sameView(t, st, id))
		}
		conn, err := pgx.Connect(t.Context(), url)
		require.NoError(t, err)
		defer conn.Close(context.Background())
		damaged(t, st, ids[0], func(q string, args ...any) {
			_, err := conn.Exec(t.Context(), q, args...)
			require.NoError(t, err)
		}, "UPDATE reprompt_messages SET data = $1 WHERE session = $2 AND generation = $3 AND idx = $4",
			"UPDATE reprompt_checkpoints SET head = $1 WHERE session = $2 AND seq = $3")
	})
}

// damaged garbles a message of session id's checkpoint at step 2 (its last
// message) and the head of its checkpoint at step 4, with exec running the
// store's statements updateMessage (data, session, generation, idx) and
// updateHead (head, session, seq), and checks that both paths report the
// same damage and show the same steps.
func damaged(t *testing.T, st session.Store, id string, exec func(q string, args ...any), updateMessage, updateHead string) {
	ctx := t.Context()
	at2, err := st.AtStep(ctx, id, 2)
	require.NoError(t, err)
	at4, err := st.AtStep(ctx, id, 4)
	require.NoError(t, err)
	latest, err := st.Latest(ctx, id)
	require.NoError(t, err)
	// The last message of step 2's checkpoint is stored under its own
	// generation: the rewind wrote that generation's transcript in full.
	exec(updateMessage, []byte("\x00not json"), id, at2.Generation, len(at2.Transcript)-1)
	exec(updateHead, []byte(`{"version":1,"session_id":`), id, at4.Seq)
	require.NotEqual(t, latest.Seq, at4.Seq, "the damaged head is the latest checkpoint's")
	err = sameView(t, st, id)
	dmg, ok := err.(*viewer.DamageError)
	require.True(t, ok, "%v", err)
	places := strings.Join(dmg.Places, "\n")
	assert.Contains(t, places, "the checkpoint that ends step 1: ")
	assert.Contains(t, places, "the checkpoint that ends step 3: ")
	assert.Contains(t, places, "is corrupt: head: unexpected end of JSON input")
	assert.Contains(t, places, "is corrupt: message ")
}

// failingPass is a store whose one-pass read fails after its first
// steps, as a database connection lost in the middle would.
type failingPass struct {
	session.Store
	after int
}

func (f failingPass) AtSteps(ctx context.Context, id string, first, last int) iter.Seq2[*session.Checkpoint, error] {
	return func(yield func(*session.Checkpoint, error) bool) {
		n := 0
		for cp, err := range f.Store.(session.StepReader).AtSteps(ctx, id, first, last) {
			if n == f.after {
				yield(nil, errors.New("connection lost"))
				return
			}
			if !yield(cp, err) {
				return
			}
			n++
		}
	}
}

// TestOnePassFails checks that when the one-pass read ends early on an
// error, the step it was reading is named damaged and the steps after it
// are read one at a time.
func TestOnePassFails(t *testing.T) {
	st := session.NewMemory()
	_, err := runtime.Run(t.Context(), script(), agent, runtime.Config{Store: st, SessionID: "s"})
	require.NoError(t, err)
	want, err := viewer.FromStore(t.Context(), st, "s")
	require.NoError(t, err)
	run, err := viewer.FromStore(t.Context(), failingPass{Store: st, after: 2}, "s")
	dmg, ok := err.(*viewer.DamageError)
	require.True(t, ok, "%v", err)
	assert.Equal(t, []string{"the checkpoint that ends step 1: connection lost"}, dmg.Places)
	require.Len(t, run.Steps, len(want.Steps))
	assert.Equal(t, "the checkpoint that ends step 1 could not be read: connection lost", run.Steps[1].Damage, "the step pane names the checkpoint as the notes do")
	for _, i := range []int{0, 2, 3} {
		assert.Empty(t, run.Steps[i].Damage, "step %d", i)
		assert.Equal(t, pool(want, want.Steps[i].Request), pool(run, run.Steps[i].Request), "step %d", i)
		assert.Equal(t, want.Messages[want.Steps[i].Reply], run.Messages[run.Steps[i].Reply], "step %d", i)
	}
}
