package runtime_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/session/sqlite"
	"github.com/reprompt/reprompt/snapshots"
)

// openSQLite opens the SQLite store at path, closed when the test ends.
func openSQLite(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(path)
	require.NoError(t, err, "open %s", path)
	t.Cleanup(func() { st.Close() })
	return st
}

// count returns how many messages of msgs are the user's text.
func count(msgs []defs.Message, text string) int {
	n := 0
	for _, m := range msgs {
		if m.Role == defs.RoleUser && m.Content == text {
			n++
		}
	}
	return n
}

// A message posted through the store by another process (a second handle
// on the SQLite file) while a step runs joins the transcript at the next
// step, in the order posted, and the step's record says so.
func TestPostSteersARunningRun(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sessions.db")
	worker, other := openSQLite(t, path), openSQLite(t, path)
	cfg := runtime.Config{Store: worker, SessionID: "steer"}
	fn := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "work", "Work.", func(ctx context.Context, _ struct{}) (string, error) {
			var (
				wg   sync.WaitGroup
				errs [2]error
			)
			wg.Go(func() { // the other process, while the step runs
				_, errs[0] = runtime.Post(ctx, other, "steer", "also do B")
				_, errs[1] = runtime.Post(ctx, other, "steer", "and C")
			})
			wg.Wait()
			return "worked", errors.Join(errs[:]...)
		})
		p.User("Do A.")
		return nil
	}
	res, err := runtime.Run(ctx, snapshots.Script(snapshots.CallTool("work", nil), snapshots.Text("did A, B and C")), fn, cfg)
	require.NoError(t, err)
	require.Len(t, res.Steps, 2)
	assert.Empty(t, res.Steps[0].Sent, "step 0: Sent")
	assert.Equal(t, []defs.Message{defs.UserMessage("also do B"), defs.UserMessage("and C")}, res.Steps[1].Sent, "step 1: Sent")
	assert.Equal(t, []string{
		"user: Do A.", "assistant:  {call_1 work {}}", "tool[call_1 work]: worked",
		"user: also do B", "user: and C", "assistant: did A, B and C",
	}, transcriptOf(res.Transcript))
	assert.Equal(t, 0, res.Steps[1].Turn, "steering is not a new turn")

	// The record of step 1, read by the other process, lists them.
	cp, err := other.AtStep(ctx, "steer", 2)
	require.NoError(t, err, "AtStep 2")
	require.NotNil(t, cp.Record, "the record of step 1")
	assert.Equal(t, []string{"also do B", "and C"}, cp.Record.Sent, "step 1's record: Sent")
	assert.Equal(t, "2", string(cp.Extra[runtime.InboxKey]), "the cursor in the checkpoint")
}

// A message posted to a finished conversation starts its next turn when
// Run is called, on the runner that finished it and on one resumed in
// another process; with nothing posted, Run is ErrDone.
func TestPostContinuesAFinishedConversation(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sessions.db")
	cfg := runtime.Config{Store: openSQLite(t, path), SessionID: "chat"}
	other := openSQLite(t, path)
	var c chatter
	r := runtime.New(snapshots.Script(turnScript(3)...), c.fn, cfg)
	_, err := r.Continue(ctx, "hello")
	require.NoError(t, err, "turn 0")

	seq, err := runtime.Post(ctx, other, "chat", "posted question")
	require.NoError(t, err, "Post")
	assert.Equal(t, int64(1), seq, "Post: seq")
	res, err := r.Run(ctx)
	require.NoError(t, err, "Run after a post")
	require.Len(t, res.Steps, 2, "the steps of the posted turn")
	assert.Equal(t, []defs.Message{defs.UserMessage("posted question")}, res.Steps[0].Sent, "the post joined at the turn's first step")
	assert.Equal(t, 1, res.Steps[0].Turn, "a new turn")
	n, msg := r.Turn()
	assert.Equal(t, 1, n, "Turn")
	assert.Equal(t, "posted question", msg, "Turn's message")
	assert.Equal(t, "answer 1", res.Text)

	_, err = r.Run(ctx)
	require.ErrorIs(t, err, runtime.ErrDone, "Run with nothing posted")

	// Another process resumes the finished session: a post starts its
	// next turn; the posts already taken do not join again.
	_, err = runtime.Post(ctx, other, "chat", "from the store alone")
	require.NoError(t, err, "second Post")
	r, err = runtime.Resume(ctx, snapshots.Script(turnScript(1)...), c.fn, cfg)
	require.NoError(t, err, "Resume")
	res, err = r.Run(ctx)
	require.NoError(t, err, "Run of the resumed session")
	require.NotEmpty(t, res.Steps)
	assert.Equal(t, []defs.Message{defs.UserMessage("from the store alone")}, res.Steps[0].Sent, "Sent")
	assert.Equal(t, 2, res.Steps[0].Turn, "the third turn")
	assert.Equal(t, 1, count(res.Transcript, "posted question"), "the first post joined once")
	assert.Equal(t, 1, count(res.Transcript, "from the store alone"), "the second post joined once")
	cnt, err := runtime.StateOf[int](res, "count")
	require.NoError(t, err)
	assert.Equal(t, 3, cnt, "state over the three turns")
}

// dyingInbox is a Memory (and so an Inbox) whose Save fails when fail
// says so.
type dyingInbox struct {
	*session.Memory
	fail func(cp *session.Checkpoint) bool
}

var errSaveFailed = errors.New("the process died during Save")

func (s *dyingInbox) Save(ctx context.Context, cp *session.Checkpoint) error {
	if s.fail != nil && s.fail(cp) {
		return errSaveFailed
	}
	return s.Memory.Save(ctx, cp)
}

// A run that dies between taking a post and saving the checkpoint that
// holds it takes it again after Resume; one that dies after that save does
// not: either way the post joins exactly once.
func TestPostJoinsOnceAcrossACrash(t *testing.T) {
	for _, tt := range []struct {
		name string
		// dies reports whether the Save of cp fails, given the number of
		// saves that held the cursor before it.
		dies func(cp *session.Checkpoint, held int) bool
		// resumed is the script of the resumed run.
		resumed []snapshots.Reply
	}{
		// The first save of step 1 (its reply, before the tool runs) fails:
		// step 1 runs again from the end of step 0, and takes the post again.
		{"BeforeTheSave", func(cp *session.Checkpoint, held int) bool { return cp.Extra[runtime.InboxKey] != nil },
			[]snapshots.Reply{snapshots.CallTool("add", nil), snapshots.CallTool("add", nil), snapshots.Text("done")}},
		// The save of the end of step 1 fails: the resumed run completes
		// step 1 from its saved reply, which holds the post.
		{"AfterTheSave", func(cp *session.Checkpoint, held int) bool { return held == 1 },
			[]snapshots.Reply{snapshots.CallTool("add", nil), snapshots.Text("done")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			st := &dyingInbox{Memory: session.NewMemory()}
			cfg := runtime.Config{Store: st, SessionID: "crash"}
			var c chatter
			script := []snapshots.Reply{
				snapshots.CallTool("add", nil), snapshots.CallTool("add", nil), // step 1 takes the post
				snapshots.CallTool("add", nil), snapshots.Text("done"),
			}
			r := runtime.New(snapshots.Script(script...), c.fn, cfg)
			r.Send("start")
			s, err := r.Next(ctx)
			require.NoError(t, err, "step 0")
			require.False(t, s.Done)

			_, err = runtime.Post(ctx, st, "crash", "steer")
			require.NoError(t, err, "Post")
			held := 0
			st.fail = func(cp *session.Checkpoint) bool {
				if tt.dies(cp, held) {
					return true
				}
				if cp.Extra[runtime.InboxKey] != nil {
					held++
				}
				return false
			}
			_, err = r.Run(ctx)
			require.ErrorIs(t, err, errSaveFailed, "the run dies")
			st.fail = nil

			// A new process resumes with what the store holds.
			latest, err := st.Latest(ctx, "crash")
			require.NoError(t, err)
			r, err = runtime.Resume(ctx, snapshots.Script(tt.resumed...), c.fn, cfg)
			require.NoError(t, err, "Resume")
			res, err := r.Run(ctx)
			require.NoError(t, err, "Run after Resume (latest saved at step %d)", latest.Step)
			assert.Equal(t, "done", res.Text)
			assert.Equal(t, 1, count(res.Transcript, "steer"), "the post joined exactly once: %v", transcriptOf(res.Transcript))
			cp, err := st.Latest(ctx, "crash")
			require.NoError(t, err)
			assert.Equal(t, "1", string(cp.Extra[runtime.InboxKey]), "the cursor after the run")
		})
	}
}

// Post needs a store that implements session.Inbox.
func TestPostNeedsAnInbox(t *testing.T) {
	ctx := context.Background()
	st := struct{ session.Store }{session.NewMemory()}
	_, err := runtime.Post(ctx, st, "x", "hello")
	assert.ErrorIs(t, err, runtime.ErrNoInbox, "Post to a store without Inbox")
	_, err = runtime.Post(ctx, session.NewMemory(), "unknown", "hello")
	assert.ErrorIs(t, err, session.ErrNotFound, "Post to an unknown session")
}
