package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/examples/internal/agents"
	"github.com/reprompt/reprompt/providers/openai"
	"github.com/reprompt/reprompt/session/sqlite"
	"github.com/reprompt/reprompt/snapshots"
)

// The golden printouts: what each example prints on Anthropic, served by
// a local server. Rewrite them with
//
//	REPROMPT_UPDATE=1 go test . -run 'OnAnthropic'
//
// (from this module's directory) and review their diff.
const (
	quickstartGolden = "testdata/TestQuickstartOnAnthropic.txt"
	toolGolden       = "testdata/TestStructuredOnAnthropic/tool.txt"
	nativeGolden     = "testdata/TestStructuredOnAnthropic/native.txt"
	chatGolden       = "testdata/TestChatOnAnthropic.txt"
)

// run runs the program's cli in this process, on the live build's choice
// of model, with in as its standard input, and returns what it printed.
func run(t *testing.T, in string, args ...string) string {
	t.Helper()
	var out, stderr bytes.Buffer
	code := cli(context.Background(), args, stdio{strings.NewReader(in), &out, &stderr}, liveModel)
	require.Equal(t, 0, code, "exit status of %v; stderr: %s", args, stderr.String())
	assert.Empty(t, stderr.String(), "standard error of %v", args)
	return out.String()
}

// quickstartReplies are the to-do agent's plan, carried out, and its
// answer, in Anthropic's Messages format.
var quickstartReplies = []reply{
	{`[{"type":"text","text":"I'll add both tasks."},{"type":"tool_use","id":"toolu_01","name":"add_task","input":{"title":"buy groceries"}},{"type":"tool_use","id":"toolu_02","name":"add_task","input":{"title":"call grandma"}}]`, "tool_use"},
	toolUse("toolu_03", "complete_task", `{"title":"buy groceries"}`),
	toolUse("toolu_04", "complete_task", `{"title":"call grandma"}`),
	text("All done: groceries bought and grandma called."),
}

// TestQuickstartOnAnthropic runs the quickstart's to-do agent on
// Anthropic's API, chosen from ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL,
// printed as examples/quickstart prints it.
func TestQuickstartOnAnthropic(t *testing.T) {
	srv := newMessagesServer(t, inTurn(quickstartReplies...))
	srv.env(t)
	out := run(t, "", "quickstart")
	snapshots.Golden(t, quickstartGolden, []byte(out))
	assert.Len(t, srv.requests(), 4, "requests")
}

// triageReplies answer examples/structured's triage: both issues read,
// an answer whose priority is a string, then a valid one; as text when
// the answer is asked for natively (output_config.format), as calls of
// the answer tool otherwise.
func triageReplies(native bool) []reply {
	bad := `{"summary":"Panic on an empty config file.","labels":["bug"],"priority":"high","duplicate":41}`
	good := `{"summary":"Panic on an empty config file.","labels":["bug"],"priority":1,"duplicate":41}`
	read := reply{`[{"type":"tool_use","id":"toolu_01","name":"read_issue","input":{"number":42}},{"type":"tool_use","id":"toolu_02","name":"read_issue","input":{"number":41}}]`, "tool_use"}
	if native {
		return []reply{read, text(bad), text(good)}
	}
	return []reply{read, toolUse("toolu_03", "triage", bad), toolUse("toolu_04", "triage", good)}
}

// TestStructuredOnAnthropic runs examples/structured's triage on
// Anthropic's API, with its answer asked for with an answer tool (-tool)
// and natively (-native: output_config.format); without either, on a
// model that takes output_config.format, natively. The invalid answer is
// sent back and answered again in both modes.
func TestStructuredOnAnthropic(t *testing.T) {
	var native string
	for _, tc := range []struct {
		name   string
		args   []string
		native bool
		golden string
	}{
		{"tool", []string{"-tool"}, false, toolGolden},
		{"native", []string{"-native"}, true, nativeGolden},
		{"auto", nil, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newMessagesServer(t, inTurn(triageReplies(tc.native)...))
			srv.env(t)
			out := run(t, "", append([]string{"structured"}, tc.args...)...)
			switch {
			case tc.golden != "":
				snapshots.Golden(t, tc.golden, []byte(out))
			case native != "":
				assert.Equal(t, native, out, "the printout without a flag against -native's")
			}
			if tc.native {
				native = out
			}
			assert.True(t, strings.HasSuffix(out, "triage: Panic on an empty config file. labels=[bug] priority=1 duplicate=#41\n"), "the answer: %s", out)

			reqs := srv.requests()
			require.Len(t, reqs, 3, "requests: read, the invalid answer, the valid one")
			for i, r := range reqs {
				if tc.native {
					assert.Equal(t, "json_schema", r.OutputConfig.Format.Type, "request %d: output_config.format", i)
					assert.Contains(t, r.OutputConfig.Format.Schema["properties"], "priority", "request %d: the answer's schema", i)
					assert.Equal(t, []string{"read_issue"}, r.toolNames(), "request %d: tools", i)
				} else {
					assert.Empty(t, r.OutputConfig.Format.Type, "request %d: output_config.format", i)
					assert.Equal(t, []string{"read_issue", "triage"}, r.toolNames(), "request %d: tools", i)
				}
			}
			last := reqs[2].Messages[len(reqs[2].Messages)-1]
			var sent []string
			for _, b := range last.Content {
				sent = append(sent, b.Text+b.resultText())
			}
			assert.Contains(t, strings.Join(sent, "\n"), `want "integer"`, "the validation error sent back")
		})
	}
}

// chatReply answers the chat from the request, as the chat's offline
// model does (agents.EchoModel): a tool result is answered (a note kept
// is followed by the <notes> variable when the request reminds the model
// of it); otherwise the turn's question, the <question> variable, asks
// for remember ("remember X"), recall (another question about what to
// remember) or nothing (it is repeated). Tool use ids count the calls of
// the transcript, so that a resumed conversation goes on numbering them.
func chatReply(_ int, r *request) reply {
	last := r.Messages[len(r.Messages)-1]
	names := map[string]string{} // tool_use id → tool
	calls := 0
	for _, m := range r.Messages {
		for _, b := range m.Content {
			if b.Type == "tool_use" {
				names[b.ID] = b.Name
				calls++
			}
		}
	}
	reminded := false
	for _, b := range last.Content {
		reminded = reminded || b.Type == "text" && strings.HasPrefix(b.Text, "<reminder>") && strings.Contains(b.Text, "<notes>")
	}
	var answers []string
	for _, b := range last.Content {
		if b.Type != "tool_result" {
			continue
		}
		switch res := b.resultText(); names[b.ToolUseID] {
		case "remember":
			a := fmt.Sprintf("I will remember %q.", res)
			if reminded {
				a += " Notes: " + strings.ReplaceAll(r.variable("notes"), "; ", ", ") + "."
			}
			answers = append(answers, a)
		case "recall":
			var notes []string
			_ = json.Unmarshal([]byte(res), &notes)
			answers = append(answers, "You asked me to remember: "+strings.Join(notes, ", ")+".")
		default:
			answers = append(answers, "unknown tool use "+b.ToolUseID)
		}
	}
	if len(answers) > 0 {
		return text(strings.Join(answers, " "))
	}
	q := r.variable("question")
	id := fmt.Sprintf("toolu_%02d", calls+1)
	lower := strings.ToLower(q)
	switch {
	case strings.HasPrefix(lower, "remember ") && !strings.HasSuffix(lower, "?"):
		note, _ := json.Marshal(q[len("remember "):])
		return toolUse(id, "remember", `{"note":`+string(note)+`}`)
	case strings.Contains(lower, "remember") || strings.Contains(lower, "recall"):
		return toolUse(id, "recall", `{}`)
	}
	return text(fmt.Sprintf("You said %q (turn %s).", q, r.variable("turn")))
}

// TestChatOnAnthropic runs examples/chat on Anthropic's API: three turns
// in a new SQLite file, then a fourth in a second run of the program,
// which resumes the session (a new store and Runner) and recalls the note
// the first run kept.
func TestChatOnAnthropic(t *testing.T) {
	srv := newMessagesServer(t, chatReply)
	srv.env(t)
	db := filepath.Join(t.TempDir(), "chat.db")
	first := run(t, "hello\nremember milk\nwhat do I remember?\n", "chat", "-db", db)
	require.Len(t, srv.requests(), 5, "requests of the first run: one a turn, and one a tool call")
	second := run(t, "what do I remember?\n", "chat", "-db", db)
	snapshots.Golden(t, chatGolden, []byte(strings.ReplaceAll(first+second, db, "DB")))

	reqs := srv.requests()
	require.Len(t, reqs, 7, "requests: one a turn, and one a tool call")
	assert.Equal(t, "", reqs[1].variable("notes"), "the request that calls remember: notes")
	assert.Equal(t, "milk", reqs[2].variable("notes"), "the request after remember: notes")
	assert.Contains(t, reqs[2].Messages[len(reqs[2].Messages)-1].Content[1].Text, "<notes>", "the request after remember: the reminder of the notes")
	assert.Len(t, reqs[5].Messages, 11, "the resumed run's first request: the first run's transcript and the new turn")
	assert.Equal(t, "4", reqs[5].variable("turn"), "the resumed run's first request: turn")
	for i, r := range reqs {
		assert.Equal(t, []string{"remember", "recall"}, r.toolNames(), "request %d: tools", i)
	}
	st, err := sqlite.Open(db)
	require.NoError(t, err)
	defer st.Close()
	cp, err := st.Latest(context.Background(), "chat")
	require.NoError(t, err, "the session in %s", db)
	assert.True(t, cp.Done, "the last turn ended")
	assert.JSONEq(t, `{"notes":["milk"]}`, string(cp.State), "state")
	var users []string
	for _, m := range cp.Transcript {
		if m.Role == defs.RoleUser {
			users = append(users, m.Content)
		}
	}
	assert.Empty(t, cmp.Diff([]string{"hello", "remember milk", "what do I remember?", "what do I remember?"}, users), "the user's messages (-want +got)")
}

// TestNoKeyFallsBack: without ANTHROPIC_API_KEY the live build's choice
// is the example's own live build's: its offline model without OpenAI's
// variables, an OpenAI-compatible endpoint with them.
func TestNoKeyFallsBack(t *testing.T) {
	for _, v := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"} {
		t.Setenv(v, "")
	}
	script := agents.TodoScript()
	m, about := liveModel("quickstart", script, "scripted model")
	assert.Same(t, script, m, "the scripted model")
	assert.Equal(t, "scripted model (offline; set ANTHROPIC_API_KEY, or OPENAI_API_KEY or OPENAI_BASE_URL, to use a real one)", about)
	m, _ = liveModel("chat", agents.EchoModel{}, "echo model")
	assert.Equal(t, agents.EchoModel{}, m, "the chat's offline model")

	out := run(t, "", "structured")
	assert.True(t, strings.HasPrefix(out, "triage on scripted model (offline; "), "the first line: %s", out)
	assert.True(t, strings.HasSuffix(out, "priority=1 duplicate=#41\n"), "the answer: %s", out)
	// With OpenAI's variables, as the examples' own live builds do: an
	// OpenAI-compatible endpoint (nothing is sent here).
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_MODEL", "qwen3:4b")
	m, about = liveModel("structured", agents.TriageScript(), "scripted model")
	assert.Equal(t, "model qwen3:4b from the environment", about)
	assert.IsType(t, &openai.Model{}, m, "the OpenAI adapter")
}

// TestUsage: the first argument names an example, and what follows it is
// that example's flags.
func TestUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"nope"}, {"structured", "extra"}, {"chat", "-nope"}} {
		var out, stderr bytes.Buffer
		code := cli(context.Background(), args, stdio{strings.NewReader(""), &out, &stderr}, liveModel)
		assert.Equal(t, 2, code, "exit status of %q", args)
		assert.Empty(t, out.String(), "standard output of %q", args)
		assert.NotEmpty(t, stderr.String(), "standard error of %q", args)
	}
	var stderr bytes.Buffer
	cli(context.Background(), nil, stdio{strings.NewReader(""), &bytes.Buffer{}, &stderr}, liveModel)
	assert.Equal(t, "usage: anthropic chat|quickstart|structured [flags]\n", stderr.String())
}

// TestInterrupt: an interrupt (ctx cancelled) while the chat waits for a
// line ends it with status 130 and says how to go on.
func TestInterrupt(t *testing.T) {
	for _, v := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"} {
		t.Setenv(v, "")
	}
	ctx, cancel := context.WithCancel(context.Background())
	in, w := io.Pipe() // a line that never comes
	defer w.Close()
	args := []string{"chat", "-db", filepath.Join(t.TempDir(), "chat.db")}
	var out, stderr bytes.Buffer
	done := make(chan int)
	go func() { done <- cli(ctx, args, stdio{in, &out, &stderr}, liveModel) }()
	cancel()
	assert.Equal(t, 130, <-done, "exit status")
	assert.Equal(t, "\nchat: interrupted; run it again to continue the conversation\n", stderr.String())
}

// build builds the program, with -tags tags if not empty, and returns the
// binary's path.
func build(t *testing.T, tags string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "anthropic")
	args := []string{"build", "-o", bin}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
	require.NoError(t, err, "go %v: %s", args, out)
	return bin
}

// execute runs bin with args, env added to the environment and in as its
// standard input, and returns its standard output and error.
func execute(t *testing.T, bin string, env []string, in string, args ...string) (string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%v: stderr: %s", args, stderr.String())
	return string(out), stderr.String()
}

// TestLiveBuild builds the program with -tags live, as a user runs it,
// and runs each example with ANTHROPIC_API_KEY set, on a local server:
// each prints what the tests above print in this process. The chat's
// second turn is a second process, which resumes the session from the
// SQLite file.
func TestLiveBuild(t *testing.T) {
	bin := build(t, "live")
	golden := func(path string) string {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		return string(b)
	}
	t.Run("quickstart", func(t *testing.T) {
		srv := newMessagesServer(t, inTurn(quickstartReplies...))
		out, stderr := execute(t, bin, srv.environ(), "", "quickstart")
		assert.Equal(t, golden(quickstartGolden), out, "the printout against "+quickstartGolden)
		assert.Empty(t, stderr, "standard error")
	})
	for _, tc := range []struct {
		args   []string
		native bool
		golden string
	}{
		{[]string{"structured", "-tool"}, false, toolGolden},
		{[]string{"structured"}, true, nativeGolden}, // natively: the model takes output_config.format
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			srv := newMessagesServer(t, inTurn(triageReplies(tc.native)...))
			out, stderr := execute(t, bin, srv.environ(), "", tc.args...)
			assert.Equal(t, golden(tc.golden), out, "the printout against "+tc.golden)
			assert.Empty(t, stderr, "standard error")
		})
	}
	t.Run("chat", func(t *testing.T) {
		srv := newMessagesServer(t, chatReply)
		db := filepath.Join(t.TempDir(), "chat.db")
		first, stderr1 := execute(t, bin, srv.environ(), "hello\nremember milk\nwhat do I remember?\n", "chat", "-db", db)
		second, stderr2 := execute(t, bin, srv.environ(), "what do I remember?\n", "chat", "-db", db)
		assert.Equal(t, golden(chatGolden), strings.ReplaceAll(first+second, db, "DB"), "the two processes' printout against "+chatGolden)
		assert.Empty(t, stderr1+stderr2, "standard error")
		assert.Len(t, srv.requests(), 7, "requests: one a turn, and one a tool call")
	})
}

// TestOfflineBuild: the build without -tags live sends nothing, even with
// ANTHROPIC_API_KEY set; it says so, and runs on the offline model.
func TestOfflineBuild(t *testing.T) {
	bin := build(t, "")
	srv := newMessagesServer(t, inTurn(quickstartReplies...))
	out, stderr := execute(t, bin, srv.environ(), "", "quickstart")
	assert.Equal(t, "quickstart: ANTHROPIC_API_KEY is set, but this build is offline; for Anthropic: go run -tags live . quickstart\n", stderr)
	assert.True(t, strings.HasPrefix(out, "reprompt quickstart: a to-do agent on the scripted model (offline; go run -tags live . quickstart with ANTHROPIC_API_KEY set uses Anthropic).\n"), "the first line: %s", out)
	assert.Empty(t, srv.requests(), "requests to the server")
}
