package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/session/sqlite"
)

// waitFor bounds every wait for the chat process: generous, for a loaded
// machine.
const waitFor = 60 * time.Second

// TestChat builds the chat command once and drives the binary through
// pipes, as a user's shell would.
func TestChat(t *testing.T) {
	goBin, err := exec.LookPath("go")
	require.NoError(t, err, "this test needs the go command")
	bin := filepath.Join(t.TempDir(), "chat")
	out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	t.Run("Pipe", func(t *testing.T) { testPipe(t, bin) })
	t.Run("SIGKILL", func(t *testing.T) { testKill(t, bin) })
}

// testPipe sends lines on standard input, closed after the last, and
// checks everything the chat printed; a second process continues the
// conversation.
func testPipe(t *testing.T, bin string) {
	db := filepath.Join(t.TempDir(), "chat.db")
	chat := func(in string) string {
		cmd := exec.Command(bin, "-db", db)
		cmd.Stdin = strings.NewReader(in)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		require.NoError(t, err, "chat: %s", stderr.String())
		assert.Empty(t, stderr.String(), "chat's standard error")
		return strings.ReplaceAll(string(out), db, "DB")
	}

	got := chat("hello\nremember milk\n\nwhat do I remember?\nremember eggs\nhow are you\n")
	want := `chat: new session "chat" in DB, on the offline echo model (for a real one: -tags live and OPENAI_BASE_URL or OPENAI_API_KEY)
you> hello
bot> You said "hello" (turn 1).
you> remember milk
  - remember {"note":"milk"} -> milk
bot> I will remember "milk". Notes: milk.
you> what do I remember?
  - recall {} -> ["milk"]
bot> You asked me to remember: milk.
you> remember eggs
  - remember {"note":"eggs"} -> eggs
bot> I will remember "eggs". Notes: milk, eggs.
you> how are you
bot> You said "how are you" (turn 5; 2 notes kept).
`
	assert.Empty(t, cmp.Diff(want, got), "first process's output mismatch (-want +got)")

	got = chat("what do I remember?\n")
	want = `chat: resumed session "chat" in DB: 5 turns, on the offline echo model (for a real one: -tags live and OPENAI_BASE_URL or OPENAI_API_KEY)
you> what do I remember?
  - recall {} -> ["milk","eggs"]
bot> You asked me to remember: milk, eggs.
`
	assert.Empty(t, cmp.Diff(want, got), "second process's output mismatch (-want +got)")
}

// testKill kills the chat with SIGKILL four times: between turns, inside
// a call of remember (not idempotent), inside a call of recall
// (idempotent), and right after a line was written, before or during its
// turn. Each time a new process is started on the same file, and the
// lines the store does not hold yet are sent again. In the end, the stored
// transcript holds every turn once with its answer, and no remember call
// ran twice.
func testKill(t *testing.T, bin string) {
	ctx := context.Background()
	dir := t.TempDir()
	db, toolLog := filepath.Join(dir, "chat.db"), filepath.Join(dir, "tools.log")
	lines := []string{
		"hello",               // 0
		"remember milk",       // 1
		"what do I remember?", // 2
		"remember eggs",       // 3: killed inside remember
		"remember bread",      // 4
		"recall my notes",     // 5: killed inside recall
		"remember tea",        // 6
		"how many turns?",     // 7: killed as soon as written
		"remember jam",        // 8
		"what do I remember?", // 9
	}
	start := func(hang string) *chatProc {
		return startChat(t, bin, []string{envToolLog + "=" + toolLog, envHang + "=" + hang}, "-db", db)
	}

	// Kill 1: between turns.
	p := start("")
	p.expect("chat: new session")
	for _, l := range lines[:2] {
		p.send(l)
		p.expect("bot> ")
	}
	p.kill()

	// Kill 2: inside remember, which waits in this process.
	p = start("remember")
	assert.Contains(t, p.expect("chat: resumed"), ": 2 turns,")
	p.send(lines[2])
	p.expect("bot> ")
	p.send(lines[3])
	waitForLog(t, toolLog, `^remember \S+ eggs$`, 1)
	p.kill()

	// Kill 3: the turn is finished first; the remember call cut short is
	// not run again. Then inside recall, which waits in this process.
	p = start("recall")
	assert.Contains(t, p.expect("chat: resumed"), ": 4 turns,")
	assert.Contains(t, p.expect("chat: turn "), `turn 4 ("remember eggs") was cut short`)
	assert.Contains(t, p.expect("bot> "), "remember failed: ", "the answer to the interrupted call")
	p.send(lines[4])
	p.expect("bot> ")
	p.send(lines[5])
	waitForLog(t, toolLog, `^recall `, 2) // the recall of line 2, then this one
	p.kill()

	// Kill 4: the recall cut short is run again (idempotent); a line is
	// written and the process killed at once.
	p = start("")
	p.expect("chat: resumed")
	p.expect("chat: turn ")
	assert.Equal(t, "bot> You asked me to remember: milk, bread.", p.expect("bot> "))
	p.send(lines[6])
	p.expect("bot> ")
	p.send(lines[7])
	p.kill()

	// The last process: it finishes the turn of line 7 if the store has
	// it, and is sent the lines the store does not hold.
	cp := latest(ctx, t, db)
	sent := len(userMessages(cp.Transcript))
	require.GreaterOrEqual(t, sent, 7, "the turns answered before the last kill are stored")
	require.LessOrEqual(t, sent, 8)
	p = start("")
	p.expect("chat: resumed")
	if !cp.Done {
		p.expect("chat: turn ")
		p.expect("bot> ")
	}
	for _, l := range lines[sent:] {
		p.send(l)
		p.expect("bot> ")
	}
	p.close()

	cp = latest(ctx, t, db)
	assert.True(t, cp.Done, "the last turn ended")
	assert.Empty(t, cmp.Diff(lines, userMessages(cp.Transcript)), "the user's messages, each once (-want +got)")
	answers := answersOf(cp.Transcript)
	require.Len(t, answers, len(lines), "one answer a turn: %q", answers)
	assert.True(t, strings.HasPrefix(answers[3], "remember failed: "), "the answer to the interrupted remember: %q", answers[3])
	answers[3] = "(interrupted)"
	assert.Empty(t, cmp.Diff([]string{
		`You said "hello" (turn 1).`,
		`I will remember "milk". Notes: milk.`,
		`You asked me to remember: milk.`,
		"(interrupted)",
		`I will remember "bread". Notes: milk, bread.`,
		`You asked me to remember: milk, bread.`,
		`I will remember "tea". Notes: milk, bread, tea.`,
		`You said "how many turns?" (turn 8; 3 notes kept).`,
		`I will remember "jam". Notes: milk, bread, tea, jam.`,
		`You asked me to remember: milk, bread, tea, jam.`,
	}, answers), "the answers, in order (-want +got)")
	assert.JSONEq(t, `{"notes":["milk","bread","tea","jam"]}`, string(cp.State), "state: eggs was never kept")

	// The tool log: every run of a tool, including those cut short.
	runs := map[string]int{}
	var order []string
	for _, l := range logLines(t, toolLog) {
		f := strings.Fields(l)
		require.GreaterOrEqual(t, len(f), 2, "tool log line %q", l)
		key := f[0] + " " + f[1]
		if runs[key] == 0 {
			order = append(order, f[0]+" "+strings.Join(f[2:], " "))
		}
		runs[key]++
	}
	assert.Empty(t, cmp.Diff([]string{
		"remember milk", "recall ", "remember eggs", "remember bread", "recall ", "remember tea", "remember jam", "recall ",
	}, order), "the tool calls, in order (-want +got)")
	for key, n := range runs {
		switch {
		case strings.HasPrefix(key, "remember "):
			assert.Equal(t, 1, n, "runs of %s: remember is not idempotent", key)
		case n != 1:
			assert.Equal(t, 2, n, "runs of %s: only the recall cut short runs again", key)
		}
	}
	reruns := 0
	for _, n := range runs {
		reruns += n - 1
	}
	assert.Equal(t, 1, reruns, "calls run again after a crash: %v", runs)
}

// chatProc is a running chat process.
type chatProc struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string // its standard output, a line at a time

	mu     sync.Mutex
	stdout []string // what it printed so far, for failure messages
	stderr strings.Builder
}

// startChat starts bin with args, its environment the test's plus env
// (KEY=value entries).
func startChat(t *testing.T, bin string, env []string, args ...string) *chatProc {
	t.Helper()
	p := &chatProc{t: t, cmd: exec.Command(bin, args...), lines: make(chan string, 100)}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stderr = &lockedWriter{mu: &p.mu, b: &p.stderr}
	var err error
	p.stdin, err = p.cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := p.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start(), "start %s", bin)
	t.Cleanup(func() { _ = p.cmd.Process.Kill() })
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.mu.Lock()
			p.stdout = append(p.stdout, sc.Text())
			p.mu.Unlock()
			p.lines <- sc.Text()
		}
	}()
	return p
}

// send writes a line to the chat's standard input.
func (p *chatProc) send(line string) {
	p.t.Helper()
	_, err := io.WriteString(p.stdin, line+"\n")
	require.NoError(p.t, err, "write %q to the chat", line)
}

// expect reads lines until one starts with prefix, and returns it.
func (p *chatProc) expect(prefix string) string {
	p.t.Helper()
	timeout := time.After(waitFor)
	for {
		select {
		case l, ok := <-p.lines:
			require.True(p.t, ok, "the chat ended before printing %q: %s", prefix, p.output())
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-timeout:
			require.FailNow(p.t, "timeout", "no line starting with %q in %s: %s", prefix, waitFor, p.output())
		}
	}
}

// kill kills the process with SIGKILL and waits for it.
func (p *chatProc) kill() {
	p.t.Helper()
	require.NoError(p.t, p.cmd.Process.Signal(syscall.SIGKILL))
	err := p.cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(p.t, err, &ee, "the chat was killed")
	ws, ok := ee.Sys().(syscall.WaitStatus)
	require.True(p.t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL, "the chat ended by SIGKILL: %v: %s", err, p.output())
}

// close closes the chat's standard input and waits for it to exit.
func (p *chatProc) close() {
	p.t.Helper()
	require.NoError(p.t, p.stdin.Close())
	for range p.lines { // drain what is left
	}
	require.NoError(p.t, p.cmd.Wait(), "the chat's exit: %s", p.output())
	p.mu.Lock()
	defer p.mu.Unlock()
	assert.Empty(p.t, p.stderr.String(), "chat's standard error")
}

func (p *chatProc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return "\nstdout:\n" + strings.Join(p.stdout, "\n") + "\nstderr:\n" + p.stderr.String()
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(b)
}

// waitForLog waits until n lines of the tool log match re.
func waitForLog(t *testing.T, path, re string, n int) {
	t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(waitFor)
	for {
		got := 0
		for _, l := range logLines(t, path) {
			if rx.MatchString(l) {
				got++
			}
		}
		if got >= n {
			return
		}
		require.True(t, time.Now().Before(deadline), "no %d lines matching %s in the tool log after %s", n, re, waitFor)
		time.Sleep(10 * time.Millisecond)
	}
}

func logLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// latest reads the session's latest checkpoint from the file, as another
// process would.
func latest(ctx context.Context, t *testing.T, db string) *session.Checkpoint {
	t.Helper()
	st, err := sqlite.Open(db)
	require.NoError(t, err, "open %s", db)
	defer st.Close()
	cp, err := st.Latest(ctx, "chat")
	require.NoError(t, err, "the session in %s", db)
	return cp
}

// userMessages returns the texts of the user's messages.
func userMessages(msgs []defs.Message) []string {
	var out []string
	for _, m := range msgs {
		if m.Role == defs.RoleUser {
			out = append(out, m.Content)
		}
	}
	return out
}

// answersOf returns the texts of the assistant's answers: its messages
// that call no tool.
func answersOf(msgs []defs.Message) []string {
	var out []string
	for _, m := range msgs {
		if m.Role == defs.RoleAssistant && len(m.ToolCalls) == 0 {
			out = append(out, m.Content)
		}
	}
	return out
}
