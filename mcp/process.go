package mcp

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// stderrTail is how much of the end of a server process's standard error
// is kept, to explain why it failed.
const stderrTail = 4 << 10

// stopWait is how long a server process is given to exit after its input
// is closed, and again after it is sent SIGTERM, before it is killed.
const stopWait = time.Second

// ProcessError is a failure of a server started with Command, with what
// its process left: how it ended, if it did on its own, and the end of
// what it wrote to its standard error. It wraps the failure.
type ProcessError struct {
	// Command is the command and its arguments, credentials hidden.
	Command string
	// Exit is how the process ended on its own ("exit status 1",
	// "signal: killed"), or "" if it had not (it was still running, or
	// was stopped because the connection was closed).
	Exit string
	// Stderr is the end of its standard error: of the last 4 KiB it
	// wrote, whole lines where it can, control characters escaped.
	Stderr string
	Err    error
}

func (e *ProcessError) Error() string {
	var b strings.Builder
	b.WriteString(e.Err.Error())
	switch {
	case e.Exit != "" && e.Stderr != "":
		fmt.Fprintf(&b, "; the server process ended (%s), its standard error ending with:", e.Exit)
	case e.Exit != "":
		fmt.Fprintf(&b, "; the server process ended (%s) with nothing on its standard error", e.Exit)
	case e.Stderr != "":
		b.WriteString("; the server process's standard error ends with:")
	}
	if e.Stderr != "" {
		b.WriteString("\n\t")
		b.WriteString(strings.ReplaceAll(e.Stderr, "\n", "\n\t"))
	}
	return b.String()
}

func (e *ProcessError) Unwrap() error { return e.Err }

// process is a transport that starts a command and speaks MCP over its
// standard input and output, keeping the end of its standard error and
// how it exited to explain a failure. It serves one connection.
type process struct {
	cmd  *exec.Cmd
	name string

	stderr  tail
	started bool
	// done is closed once the process has exited and its standard error
	// has been read; state is then set.
	done  chan struct{}
	state *os.ProcessState
	// stopped is set when Close had to signal the process: how it ended
	// is then not its own doing.
	stopped atomic.Bool
}

func newProcess(name string, cmd *exec.Cmd) *process {
	return &process{cmd: cmd, name: name, done: make(chan struct{})}
}

// Connect starts the command. Its standard output is an *os.File of its
// own, not a pipe from exec (which Wait closes as the process exits,
// losing what was written last).
func (p *process) Connect(ctx context.Context) (sdk.Connection, error) {
	out, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	p.cmd.Stdout = w
	p.cmd.Stderr = &p.stderr
	p.cmd.WaitDelay = stopWait // a child holding the standard error open does not hold Wait
	in, err := p.cmd.StdinPipe()
	if err == nil {
		err = p.cmd.Start()
	}
	_ = w.Close()
	if err != nil {
		_ = out.Close()
		return nil, err
	}
	p.started = true
	go func() {
		_ = p.cmd.Wait()
		p.state = p.cmd.ProcessState
		close(p.done)
	}()
	return (&sdk.IOTransport{Reader: io.NopCloser(out), Writer: &processInput{WriteCloser: in, p: p, out: out}}).Connect(ctx)
}

// processInput is the standard input of a process; closing it stops the
// process: it is asked to exit (its input ends), then sent SIGTERM, then
// killed.
type processInput struct {
	io.WriteCloser
	p   *process
	out *os.File
}

func (in *processInput) Close() error {
	err := in.WriteCloser.Close()
	p := in.p
	if !p.wait(stopWait) {
		p.stopped.Store(true)
		if p.cmd.Process.Signal(syscall.SIGTERM) != nil || !p.wait(stopWait) {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	_ = in.out.Close() // ends the read of a child still holding the output open
	return err
}

// wait waits at most d for the process to end, and says whether it did.
func (p *process) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return true
	case <-t.C:
		return false
	}
}

// explain returns err with what the process left: how it ended, if it did
// on its own, and the end of its standard error. A process whose output
// ended is given a moment to exit.
func (p *process) explain(err error) error {
	if !p.started {
		return err
	}
	e := &ProcessError{Command: p.name, Err: err}
	if p.wait(100*time.Millisecond) && !p.stopped.Load() {
		e.Exit = p.state.String()
	}
	e.Stderr = p.stderr.String()
	if e.Exit == "" && e.Stderr == "" {
		return err
	}
	return e
}

// tail keeps the last bytes written to it (stderrTail of them).
type tail struct {
	mu sync.Mutex
	b  []byte
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, b...)
	if len(t.b) > 2*stderrTail {
		t.b = append(t.b[:0], t.b[len(t.b)-stderrTail:]...)
	}
	return len(b), nil
}

// String returns the tail as text: from a line's start where one is in
// reach, without trailing blank lines, control characters other than
// newline and tab escaped.
func (t *tail) String() string {
	t.mu.Lock()
	b := t.b
	if len(b) > stderrTail {
		b = b[len(b)-stderrTail:]
		if i := strings.IndexByte(string(b), '\n'); i >= 0 && i < len(b)-1 {
			b = b[i+1:]
		}
	}
	s := string(b)
	t.mu.Unlock()
	s = strings.TrimRightFunc(strings.ToValidUTF8(s, "\uFFFD"), unicode.IsSpace)
	s = strings.TrimLeftFunc(s, func(r rune) bool { return r == utf8.RuneError || unicode.IsSpace(r) })
	return escapeControls(s)
}

// escapeControls escapes the control characters of s other than newline
// and tab (a terminal would act on escape sequences, not show them).
func escapeControls(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isControl(r) {
			fmt.Fprintf(&b, "\\x%02x", r) // controls are below 0x100
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isControl(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' }

// secretName matches the names of flags and URL parameters whose values
// are credentials.
var secretName = regexp.MustCompile(`(?i)(key|token|secret|passw|pwd|auth|credential|signature)`)

// commandLine names a command by its name and arguments, quoted where a
// shell would need it, with the values of credential flags (--api-key=…,
// --token …) and URL passwords and credential parameters hidden.
func commandLine(name string, args []string) string {
	words := []string{quoteArg(name)}
	hideNext := false
	for _, a := range args {
		switch {
		case hideNext:
			a, hideNext = "xxxxx", false
		case strings.HasPrefix(a, "-"):
			flag, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if secretName.MatchString(flag) {
				if hasValue {
					a = a[:strings.IndexByte(a, '=')+1] + "xxxxx"
				} else {
					hideNext = true
				}
			}
		default:
			a = redactURL(a)
		}
		words = append(words, quoteArg(a))
	}
	return strings.Join(words, " ")
}

// redactURL hides the password and the credential parameters of s if it
// is a URL; other text is returned as is.
func redactURL(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	u, err := url.Parse(s)
	if err != nil {
		return s
	}
	q := u.Query()
	hid := false
	for k := range q {
		if secretName.MatchString(k) {
			q.Set(k, "xxxxx")
			hid = true
		}
	}
	if hid {
		u.RawQuery = q.Encode()
	}
	if _, ok := u.User.Password(); !ok && !hid {
		return s
	}
	return u.Redacted()
}

// quoteArg quotes a word for a shell if it needs it.
func quoteArg(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r < utf8.RuneSelf && (r == '-' || r == '_' || r == '.' || r == '/' || r == '=' || r == ':' || r == ',' || r == '@' || r == '+' || unicode.IsLetter(r) || unicode.IsDigit(r)))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
