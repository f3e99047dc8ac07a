package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	neturl "net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session/sqlite"
	"github.com/reprompt/reprompt/snapshots"
)

type noteArgs struct {
	Note string `json:"note"`
}

// notes is a note keeper: a tool, state and an effect on it. Its tool
// calls steer while it runs (Runner.Send), as another goroutine of the
// program could: the message joins the transcript at the next step.
type notes struct {
	r     *runtime.Runner
	steer string // sent by the tool's first call, once
}

func (n *notes) fn(p *prompt.Prompt) error {
	list, setList := prompt.State(p, "notes", []string{})
	p.DefSystem("role", "You keep notes.")
	p.Def("notes", strings.Join(list, "; "))
	prompt.DefTool(p, "remember", "Remember a note.", func(ctx context.Context, a noteArgs) (string, error) {
		setList.Set(ctx, append(list, a.Note))
		if n.steer != "" {
			n.r.Send(n.steer)
			n.steer = ""
		}
		return "noted", nil
	})
	p.Effect(effects.On(len(list)), func(ctx context.Context, s *effects.Step) error { return nil })
	return nil
}

// conversationStore returns the path of a SQLite store holding session
// "chat": three turns written by Runner.Continue, the second with a tool
// call and a message sent while it ran.
func conversationStore(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "chat.db")
	st, err := sqlite.Open(path)
	require.NoError(t, err)
	defer st.Close()
	model := snapshots.Script(
		snapshots.Text("Hello! What should I remember?"),
		snapshots.CallTool("remember", noteArgs{Note: "buy milk"}),
		snapshots.Text("Noted: buy milk, and eggs."),
		snapshots.Text("You asked me to remember: buy milk."),
	)
	n := &notes{steer: "And eggs, please."}
	n.r = runtime.New(model, n.fn, runtime.Config{Store: st, SessionID: "chat"})
	for _, msg := range []string{"Hi.", "Remember to buy milk.", "What do I remember?"} {
		_, err := n.r.Continue(t.Context(), msg)
		require.NoError(t, err, "Continue(%q)", msg)
	}
	return path
}

// stable removes what changes from run to run: durations, the store's path.
func stable(out, path string) string {
	out = strings.ReplaceAll(out, path, "TMP/chat.db")
	return regexp.MustCompile(` · \d+\.\d ms`).ReplaceAllString(out, " · N ms")
}

// TestShowConversation: show writes a conversation as a chat log, each
// turn's steps folded under its answer; --steps writes every step.
func TestShowConversation(t *testing.T) {
	path := conversationStore(t)
	code, out, errs := cli(t, "--store", "sqlite:"+path, "show", "chat")
	require.Equal(t, 0, code, errs)
	snapshots.Golden(t, filepath.Join("testdata", t.Name()+".golden"), []byte(stable(out, path)))
	for _, want := range []string{
		"chat (session store sqlite:" + path + "): 3 turns, 4 steps, done\n",
		"\nuser: Hi.\nassistant: Hello! What should I remember?\n    step 0 · answer",
		"\nuser: Remember to buy milk.\nuser (sent while the run went on, joined at step 2): And eggs, please.\nassistant: Noted: buy milk, and eggs.\n",
		"\n    step 0 · answer · effects #0 (first run) · state notes · input ",
		"\n    step 1 · called remember {\"note\":\"buy milk\"} · state notes · input ",
		"\n    step 2 · +1 sent · answer · effects #0 (deps[0]: 0 → 1) · input ",
	} {
		assert.Contains(t, out, want)
	}

	code, out, errs = cli(t, "--store", "sqlite:"+path, "show", "--steps", "chat")
	require.Equal(t, 0, code, errs)
	assert.Equal(t, 4, strings.Count(out, "── step "), "--steps: every step in full\n%s", out)
	assert.Contains(t, out, "  + user: And eggs, please.", "the steering message in step 2's request")
}

// TestShowConversationGolden: a golden file of a conversation reads as a
// chat log too.
func TestShowConversationGolden(t *testing.T) {
	code, out, errs := cli(t, "show", filepath.Join("..", "..", "snapshots", "testdata", "TestConversationGolden.txtar"))
	require.Equal(t, 0, code, errs)
	want := `TestConversationGolden.txtar (golden step file): 3 turns, 4 steps, done
note: golden files hold no durations, and no counts of tokens: no token chart

user: Hi.
assistant: Hello! What should I remember?
    step 0 · answer · state notes

user: Remember to buy milk.
assistant: Noted: buy milk.
    step 1 · called remember {"note":"buy milk"} · state notes · cache miss
    step 2 · answer · cache miss

user: What do I remember?
assistant: You asked me to remember: buy milk.
    step 3 · answer · cache miss
`
	assert.Equal(t, want, out)
}

// TestServeFollows: the page served by view --serve follows the session:
// /steps answers with the steps from the one asked for, then 204 until
// the session changes, and then with the new turn's steps.
func TestServeFollows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chat.db")
	st, err := sqlite.Open(path)
	require.NoError(t, err)
	defer st.Close()
	model := snapshots.Script(snapshots.Text("Hello."), snapshots.Text("Still here."))
	n := &notes{}
	n.r = runtime.New(model, n.fn, runtime.Config{Store: st, SessionID: "chat"})
	_, err = n.r.Continue(t.Context(), "Hi.")
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"--store", "sqlite:" + path, "view", "--serve", "chat"}, &out, &out) }()
	var url string
	require.Eventually(t, func() bool {
		url = regexp.MustCompile(`http://\S+/`).FindString(out.String())
		return url != ""
	}, 10*time.Second, 10*time.Millisecond)
	assert.Contains(t, httpGet(t, url), `<body data-follow="steps">`, "the served page follows the run")

	type update struct {
		Version string `json:"version"`
		From    int    `json:"from"`
		Turns   bool   `json:"turns"`
		Steps   []struct {
			N    int    `json:"n"`
			Turn int    `json:"turn"`
			User string `json:"user"`
		} `json:"steps"`
	}
	get := func(from int, v string) (int, update) {
		resp, err := http.Get(fmt.Sprintf("%ssteps?from=%d&v=%s", url, from, neturl.QueryEscape(v)))
		require.NoError(t, err)
		defer resp.Body.Close()
		var u update
		if resp.StatusCode == http.StatusOK {
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&u))
		}
		return resp.StatusCode, u
	}
	code, u := get(0, "")
	require.Equal(t, http.StatusOK, code)
	assert.True(t, u.Turns)
	require.Len(t, u.Steps, 1)
	assert.Equal(t, "Hi.", u.Steps[0].User)
	code, _ = get(0, u.Version)
	assert.Equal(t, http.StatusNoContent, code, "nothing changed")

	_, err = n.r.Continue(t.Context(), "Are you there?")
	require.NoError(t, err)
	code, u2 := get(0, u.Version)
	require.Equal(t, http.StatusOK, code, "a new turn")
	assert.NotEqual(t, u.Version, u2.Version)
	require.Len(t, u2.Steps, 2)
	assert.Equal(t, 1, u2.Steps[1].Turn)
	assert.Equal(t, "Are you there?", u2.Steps[1].User)

	code, _ = get(-1, "")
	assert.Equal(t, http.StatusBadRequest, code)
	cancel()
	assert.Equal(t, 0, <-done)
}
