package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite" // to damage a store in TestDamagedCheckpoint

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session/sqlite"
	"github.com/reprompt/reprompt/snapshots"
)

// agent counts with a tool; an effect on the count disables a tool at
// first, and compacts the transcript when the count reaches 2.
func agent(p *prompt.Prompt) error {
	n, setN := prompt.State(p, "count", 0)
	p.DefSystem("role", "You count.")
	prompt.DefTool(p, "add", "Add one.", func(ctx context.Context, _ struct{}) (int, error) {
		setN.Set(ctx, n+1)
		return n + 1, nil
	})
	done := prompt.DefTool(p, "done", "Stop.", func(ctx context.Context, _ struct{}) (string, error) { return "ok", nil })
	p.Effect(effects.On(n), func(ctx context.Context, s *effects.Step) error {
		if n == 0 {
			done.Disable()
		}
		if n == 2 {
			msgs := s.Messages()
			s.CommitMessages(append([]defs.Message{msgs[0]}, msgs[len(msgs)-2:]...))
		}
		return nil
	})
	p.User("Count to three.")
	return nil
}

// newStore returns the path of a SQLite store holding session "count", a
// run of four steps.
func newStore(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sessions.db")
	st, err := sqlite.Open(path)
	require.NoError(t, err)
	defer st.Close()
	model := snapshots.Script(
		snapshots.CallTool("add", nil), snapshots.CallTool("add", nil), snapshots.CallTool("add", nil),
		snapshots.Text("Three."),
	)
	_, err = runtime.Run(t.Context(), model, agent, runtime.Config{Store: st, SessionID: "count"})
	require.NoError(t, err)
	return path
}

func cli(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(t.Context(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestSessions(t *testing.T) {
	store := "sqlite:" + newStore(t)
	code, out, errs := cli(t, "--store", store, "sessions")
	require.Equal(t, 0, code, errs)
	assert.Regexp(t, `(?m)^SESSION\s+STEPS\s+UPDATED\s+STATUS$`, out)
	assert.Regexp(t, `(?m)^count\s+4\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+done$`, out)
}

func TestShow(t *testing.T) {
	store := "sqlite:" + newStore(t)
	code, out, errs := cli(t, "show", "count", "--store", store) // flags after the arguments too
	require.Equal(t, 0, code, errs)
	for _, want := range []string{
		"count (session store " + store + "): 4 steps, done",
		"── step 0 · input ",
		"effect #0 before-call main_test.go:",
		": first run",
		"disabled: tool:done",
		"tools: offered done; withdrawn none", // step 1: done is offered again
		"state count = 1",                     // a new key
		"state count: 1 → 2",
		"compaction: 5 → 3 messages", // before step 2's request
		"  call call_1 add {} (",
		"reply (stop): Three.",
	} {
		assert.Contains(t, out, want)
	}
	assert.Equal(t, 4, strings.Count(out, "── step "), out)
	assert.Contains(t, out, "effect #0 before-call main_test.go:36: deps[0]: 1 → 2", "why an effect ran: its dependency changed")
}

func TestView(t *testing.T) {
	store := "sqlite:" + newStore(t)
	out := filepath.Join(t.TempDir(), "count.html")
	code, stdout, errs := cli(t, "--store", store, "view", "count", "-o", out)
	require.Equal(t, 0, code, errs)
	assert.Equal(t, "wrote "+out+" (4 steps)\n", stdout)
	page, err := os.ReadFile(out)
	require.NoError(t, err)
	m := regexp.MustCompile(`(?s)<script id="run-data" type="application/json" data-encoding="json">(.*?)</script>`).FindSubmatch(page)
	require.NotNil(t, m, "the page embeds the run")
	var data struct {
		Title string `json:"title"`
		Steps []struct {
			N          int  `json:"n"`
			Compaction bool `json:"compaction"`
		} `json:"steps"`
	}
	require.NoError(t, json.Unmarshal(m[1], &data))
	assert.Equal(t, "count", data.Title)
	require.Len(t, data.Steps, 4)
	assert.True(t, data.Steps[2].Compaction)
	assert.NotContains(t, string(page), `src="http`, "self-contained: nothing loaded from elsewhere")
	assert.NotContains(t, string(page), `<link`, "self-contained: no stylesheet link")
}

func TestRewind(t *testing.T) {
	path := newStore(t)
	store := "sqlite:" + path
	code, out, errs := cli(t, "--store", store, "rewind", "count", "--to", "2")
	require.Equal(t, 0, code, errs)
	assert.Equal(t, "session \"count\" rewound to the start of step 2 (was at step 4); runtime.Resume continues from there\n", out)
	st, err := sqlite.Open(path)
	require.NoError(t, err)
	defer st.Close()
	info, err := st.Stat(t.Context(), "count")
	require.NoError(t, err)
	assert.Equal(t, 2, info.Step)
	assert.False(t, info.Done)

	code, out, _ = cli(t, "--store", store, "show", "count")
	require.Equal(t, 0, code)
	assert.Equal(t, 2, strings.Count(out, "── step "), out)

	code, _, errs = cli(t, "--store", store, "rewind", "count", "--to", "9")
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, `rewind "count" to step 9: the session is at step 2`)
	code, _, errs = cli(t, "--store", store, "rewind", "count")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "rewind takes one SESSION and --to STEP")
}

func TestFiles(t *testing.T) {
	code, out, errs := cli(t, "show", "../../snapshots/testdata/TestSubAgentSteps.txtar")
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "TestSubAgentSteps.txtar (golden step file): 2 steps, done")
	assert.Contains(t, out, "sub-agent researcher (call call_1): 2 steps")

	code, out, errs = cli(t, "show", "../../snapshots/testdata/counter.recording.json")
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "counter.recording.json (recording)")
	assert.Contains(t, out, "call call_Xq2cW9 add {\"n\":1}")

	dir := t.TempDir()
	code, stdout, errs := cli(t, "view", "../../snapshots/testdata/TestSubAgentSteps.txtar", "-o", filepath.Join(dir, "a.html"))
	require.Equal(t, 0, code, errs)
	assert.Contains(t, stdout, "(2 steps)")
}

// TestGoldenCutShort shows and views a golden file cut short: the steps
// read before the cut, the last marked, and an error naming the file.
func TestGoldenCutShort(t *testing.T) {
	data, err := os.ReadFile("../../snapshots/testdata/TestConversationGolden.txtar")
	require.NoError(t, err)
	text := string(data)
	step2 := strings.Index(text, "-- step 2/")
	require.Positive(t, step2, "the golden file has no step 2")
	dir := t.TempDir()
	cut := filepath.Join(dir, "cut.txtar")
	require.NoError(t, os.WriteFile(cut, []byte(text[:step2+strings.Index(text[step2:], "content: ")+12]), 0o644))

	code, out, errs := cli(t, "show", "--steps", cut)
	assert.Equal(t, 1, code, "show: exit status")
	assert.Contains(t, errs, cut+": no end section: the file is cut short", "show: error")
	for _, want := range []string{"cut.txtar (golden step file): 3 steps", "── step 0 ", "── step 1 ", "── step 2 ", "! the file is cut short (it has no end section): this step may be incomplete"} {
		assert.Contains(t, out, want, "show's output")
	}

	code, out, errs = cli(t, "view", cut, "-o", filepath.Join(dir, "cut.html"))
	assert.Equal(t, 1, code, "view: exit status")
	assert.Contains(t, errs, cut+": no end section: the file is cut short", "view: error")
	assert.Contains(t, out, "(3 steps)", "view: the page of the steps read")
}

func TestErrors(t *testing.T) {
	store := "sqlite:" + newStore(t)
	notStep := filepath.Join(t.TempDir(), "notes.txt")
	require.NoError(t, os.WriteFile(notStep, []byte("hello\n"), 0o644))
	notDB := filepath.Join(t.TempDir(), "text.db")
	require.NoError(t, os.WriteFile(notDB, []byte(strings.Repeat("not a database; ", 64)), 0o644))
	badGolden := filepath.Join(t.TempDir(), "bad.txtar")
	require.NoError(t, os.WriteFile(badGolden, []byte("reprompt snapshot v1\n-- step 0/messages --\n[0] user\n  content: hi\n-- step 0/bogus --\nx\n-- end --\nsteps: 1\n"), 0o644))
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown session", []string{"--store", store, "show", "nope"}, 1, `unknown session "nope" in ` + store + ` (sessions: count)`},
		{"not a step file", []string{"show", notStep}, 1, notStep + `:1: not a golden step file (its first line is "hello", not "reprompt snapshot v1") nor a recording (JSON)`},
		{"damaged golden file", []string{"view", badGolden, "-o", filepath.Join(t.TempDir(), "bad.html")}, 1, badGolden + `:5: section "step 0/bogus": unknown section "bogus"`},
		{"no such file, no store", []string{"show", "nope"}, 1, "nope: no such file, and no --store"},
		{"missing sqlite file", []string{"--store", "sqlite:/nonexistent/x.db", "sessions"}, 1, "store sqlite:/nonexistent/x.db cannot be reached: stat /nonexistent/x.db: no such file or directory"},
		{"not a SQLite file", []string{"--store", "sqlite:" + notDB, "sessions"}, 1, "store sqlite:" + notDB + " is malformed: the file is not a SQLite database, or a damaged one: "},
		{"unreachable postgres", []string{"--store", "postgres://me:secret@127.0.0.1:1/db?connect_timeout=2", "sessions"}, 1, "store postgres://me:***@127.0.0.1:1/db?connect_timeout=2 cannot be reached: "},
		{"bad store", []string{"--store", "mysql://x", "sessions"}, 2, `store "mysql://x": want sqlite:PATH or postgres://…`},
		{"no command", nil, 2, "no command"},
		{"unknown command", []string{"frobnicate"}, 2, `unknown command "frobnicate"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("REPROMPT_STORE", "")
			code, _, errs := cli(t, tt.args...)
			assert.Equal(t, tt.code, code, errs)
			assert.Contains(t, errs, tt.want)
			assert.NotContains(t, errs, "secret")
		})
	}
}

// TestDamagedCheckpoint damages one stored message: show prints every step
// it can read, marks those it cannot, and fails naming the checkpoints.
func TestDamagedCheckpoint(t *testing.T) {
	path := newStore(t)
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	// Message 2 of the first generation: the tool result of step 0, in the
	// checkpoints that end steps 0 and 1; the compaction at step 2 starts a
	// generation that does not keep it.
	res, err := db.Exec(`UPDATE messages SET data = '{"role": 12' WHERE session = 'count' AND generation = 0 AND idx = 2`)
	require.NoError(t, err)
	n, _ := res.RowsAffected()
	require.Positive(t, n)
	require.NoError(t, db.Close())

	code, out, errs := cli(t, "--store", "sqlite:"+path, "show", "count")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "! the checkpoint that ends step 0 could not be read")
	assert.Contains(t, out, "! the checkpoint that ends step 1 could not be read")
	assert.Contains(t, out, "── step 2 · input ", "step 2 is readable")
	assert.Contains(t, out, "reply (stop): Three.", "and step 3")
	assert.Contains(t, errs, `session "count" is damaged: the checkpoint that ends step 0: session "count": checkpoint `)
	assert.Contains(t, errs, "is corrupt: message 2 of generation 0: ")
	assert.Contains(t, errs, "; the checkpoint that ends step 1: ")
	// The notes and each step name a checkpoint by the step it ends.
	assert.Contains(t, out, "note: the checkpoint that ends step 0: ")
	assert.Contains(t, out, "! the checkpoint that ends step 0 could not be read: session \"count\": checkpoint ")
}

func TestServe(t *testing.T) {
	store := "sqlite:" + newStore(t)
	ctx, cancel := context.WithCancel(t.Context())
	var out syncBuffer
	done := make(chan int)
	go func() { done <- run(ctx, []string{"--store", store, "view", "--serve", "count"}, &out, &out) }()
	var url string
	require.Eventually(t, func() bool {
		m := regexp.MustCompile(`http://\S+/`).FindString(out.String())
		url = m
		return m != ""
	}, 10e9, 10e6)
	page := httpGet(t, url)
	assert.Contains(t, page, `<script id="run-data" type="application/json" data-encoding="json">`)
	assert.Contains(t, page, `"title":"count"`)
	cancel()
	assert.Equal(t, 0, <-done)
}

// send posts the user's next message through the store: a finished run
// resumed from the store takes it as its next turn.
func TestSend(t *testing.T) {
	path := newStore(t)
	store := "sqlite:" + path
	code, out, errs := cli(t, "--store", store, "send", "count", "now count to four")
	require.Equal(t, 0, code, errs)
	assert.Equal(t, "posted message 1 to session \"count\"; it joins the run at its next step (or starts the next turn when the run is continued)\n", out)
	code, out, errs = cli(t, "send", "count", "again", "--store", store)
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "posted message 2 ")

	st, err := sqlite.Open(path)
	require.NoError(t, err)
	defer st.Close()
	r, err := runtime.Resume(t.Context(), snapshots.Script(snapshots.Text("Four.")), agent, runtime.Config{Store: st, SessionID: "count"})
	require.NoError(t, err)
	res, err := r.Run(t.Context())
	require.NoError(t, err, "Run after send")
	require.Len(t, res.Steps, 1)
	assert.Equal(t, []defs.Message{defs.UserMessage("now count to four"), defs.UserMessage("again")}, res.Steps[0].Sent, "the posts joined, in order")
	assert.Equal(t, 1, res.Steps[0].Turn, "as the next turn")

	code, _, errs = cli(t, "--store", store, "send", "nope", "hello")
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, `unknown session "nope"`)
	code, _, errs = cli(t, "--store", store, "send", "count")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "send takes one SESSION and one TEXT")
}

// TestHelp asks for the usage as a new user does: it goes to standard
// output and the status is 0, not a usage error.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"-help"}, {"help"}, {"show", "--help"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, errs := cli(t, args...)
			assert.Equal(t, 0, code, "exit status of reprompt %v", args)
			assert.Empty(t, errs, "standard error")
			assert.Contains(t, out, "usage:\n  reprompt --store STORE sessions")
			assert.Contains(t, out, "-width int", "the flags are listed")
		})
	}
}
