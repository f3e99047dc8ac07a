// Package crashtest kills a real process running a session on the SQLite
// store at random points, resumes it each time, and checks that the run
// ends exactly as an uninterrupted run does, with no tool executed twice.
package crashtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/session/sqlite"
)

const (
	sessionID = "crash"
	steps     = 30 // model steps that call tools before the final answer
	childEnv  = "REPROMPT_CRASHTEST_CHILD"
	readyLine = "crashtest: child ready"
)

// readyWriter collects a child's output and closes ready when the child
// reports that it is ready.
type readyWriter struct {
	mu    sync.Mutex
	buf   strings.Builder
	ready chan struct{}
	seen  bool
}

func (w *readyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.seen && strings.Contains(w.buf.String(), readyLine) {
		w.seen = true
		close(w.ready)
	}
	return len(p), nil
}

// model is deterministic: its reply depends only on the request. At step k
// (the number of assistant messages so far) it calls "add" twice in
// parallel, then answers with what it read.
type model struct{}

func (model) Generate(ctx context.Context, req *runtime.Request) (*runtime.Reply, error) {
	k := 0
	sum := 0
	for _, m := range req.Messages {
		switch m.Role {
		case defs.RoleAssistant:
			k++
		case defs.RoleTool:
			n, _ := strconv.Atoi(strings.TrimPrefix(m.Content, "total "))
			sum += n
		}
	}
	usage := runtime.Usage{InputTokens: 100 + k, OutputTokens: 10}
	if k >= steps {
		return &runtime.Reply{Message: defs.AssistantMessage(fmt.Sprintf("done after %d steps, checksum %d", k, sum)), Usage: usage}, nil
	}
	return &runtime.Reply{Message: defs.Message{Role: defs.RoleAssistant, Content: fmt.Sprint("step ", k), ToolCalls: []defs.ToolCall{
		{ID: fmt.Sprintf("s%d-a", k), Name: "add", Arguments: json.RawMessage(fmt.Sprintf(`{"n":%d}`, k))},
		{ID: fmt.Sprintf("s%d-b", k), Name: "add", Arguments: json.RawMessage(fmt.Sprintf(`{"n":%d}`, 100+k))},
	}}, Usage: usage}, nil
}

// ledger records executed tool calls in a file, one "id<TAB>result" line
// each, synced before the tool returns. A call whose id is in the ledger is
// not executed again: its recorded result is returned (the idempotency key
// pattern of prompt.CallID). Every invocation is also logged to attempts.
type ledger struct {
	mu       sync.Mutex
	path     string
	attempts string
}

func (l *ledger) read() (map[string]string, error) {
	b, err := os.ReadFile(l.path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	out := map[string]string{}
	for line := range strings.SplitSeq(string(b), "\n") {
		id, res, ok := strings.Cut(line, "\t")
		if ok {
			out[id] = res
		}
	}
	return out, nil
}

func appendSync(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(line); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (l *ledger) run(id string, work func() string) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := appendSync(l.attempts, id+"\n"); err != nil {
		return "", err
	}
	done, err := l.read()
	if err != nil {
		return "", err
	}
	if res, ok := done[id]; ok {
		return res, nil
	}
	res := work()
	if err := appendSync(l.path, id+"\t"+res+"\n"); err != nil {
		return "", err
	}
	return res, nil
}

// agent is the prompt: state "total" updated by the tool, an effect that
// counts the changes of "total" in state "changes", and a declared message.
func agent(l *ledger) prompt.Func {
	return func(p *prompt.Prompt) error {
		total, setTotal := prompt.State(p, "total", 0)
		changes, setChanges := prompt.State(p, "changes", 0)
		p.DefSystem("role", "You add numbers.")
		p.Def("total", fmt.Sprint(total))
		p.Def("changes", fmt.Sprint(changes))
		prompt.DefTool(p, "add", "add n to the total", func(ctx context.Context, args struct {
			N int `json:"n"`
		}) (string, error) {
			id := prompt.CallID(ctx)
			res, err := l.run(id, func() string {
				time.Sleep(time.Duration(args.N%3) * time.Millisecond)
				return fmt.Sprint("total ", args.N)
			})
			if err != nil {
				return "", err
			}
			setTotal.Update(func(v int) int { return v + args.N })
			return res, nil
		}, prompt.Idempotent())
		p.Effect(effects.On(total), func(ctx context.Context, s *effects.Step) error {
			setChanges.Update(func(v int) int { return v + 1 })
			return nil
		})
		p.User("Add the numbers.")
		return nil
	}
}

// TestCrashChild is the child process: it runs or resumes the session in
// the database named by the environment, then exits. It is skipped unless
// started by TestCrashResume.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(childEnv)
	if dir == "" {
		t.Skip("run by TestCrashResume as a child process")
	}
	if err := child(dir); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
}

func child(dir string) error {
	ctx := context.Background()
	st, err := sqlite.Open(filepath.Join(dir, "sessions.db"))
	if err != nil {
		return err
	}
	defer st.Close()
	l := &ledger{path: filepath.Join(dir, "ledger"), attempts: filepath.Join(dir, "attempts")}
	cfg := runtime.Config{Store: st, SessionID: sessionID, MaxSteps: steps + 5}
	if cp, err := st.Latest(ctx, sessionID); err == nil && cp.Done {
		return nil // finished before the last kill struck
	}
	r, err := runtime.Resume(ctx, model{}, agent(l), cfg)
	if errors.Is(err, session.ErrNotFound) {
		r, err = runtime.New(model{}, agent(l), cfg), nil
	}
	if err != nil {
		return err
	}
	fmt.Println(readyLine) // the parent's kill timer starts now
	_, err = r.Run(ctx)
	if errors.Is(err, runtime.ErrDone) {
		return nil
	}
	return err
}

type outcome struct {
	Transcript []defs.Message
	State      map[string]any
	Done       bool
}

func outcomeOf(t *testing.T, st session.Store) outcome {
	t.Helper()
	cp, err := st.Latest(context.Background(), sessionID)
	if err != nil {
		t.Fatal(err)
	}
	var state map[string]any
	if err := json.Unmarshal(cp.State, &state); err != nil {
		t.Fatal(err)
	}
	return outcome{Transcript: cp.Transcript, State: state, Done: cp.Done}
}

// TestCrashResume kills the child with SIGKILL at random moments (seeded;
// set REPROMPT_CRASH_SEED to replay), at least 20 times, resuming it after
// each kill until it completes, and compares the outcome with an
// uninterrupted run.
func TestCrashResume(t *testing.T) {
	if testing.Short() {
		t.Skip("starts many processes")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("REPROMPT_CRASH_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (REPROMPT_CRASH_SEED=%d to replay)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	// The uninterrupted run, in this process, on its own database.
	refDir := t.TempDir()
	ref, err := sqlite.Open(filepath.Join(refDir, "sessions.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	refLedger := &ledger{path: filepath.Join(refDir, "ledger"), attempts: filepath.Join(refDir, "attempts")}
	start := time.Now()
	if _, err := runtime.Run(context.Background(), model{}, agent(refLedger), runtime.Config{Store: ref, SessionID: sessionID, MaxSteps: steps + 5}); err != nil {
		t.Fatal(err)
	}
	runTime := time.Since(start)
	want := outcomeOf(t, ref)
	if !want.Done || len(want.Transcript) != 1+3*steps+1 {
		t.Fatalf("uninterrupted run: done %t, %d messages", want.Done, len(want.Transcript))
	}

	const minKills = 20
	kills, rounds := 0, 0
	var where []string // the latest checkpoint after each kill
	for kills < minKills {
		rounds++
		dir := t.TempDir()
		roundKills := 0
		for attempt := 0; ; attempt++ {
			if attempt > 2000 {
				t.Fatalf("round %d: no completion after %d attempts", rounds, attempt)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), childEnv+"="+dir)
			var stderr strings.Builder
			stdout := &readyWriter{ready: make(chan struct{})}
			cmd.Stderr, cmd.Stdout = &stderr, stdout
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Kill at a random moment after the child opened the store:
			// within about a fifth of an uninterrupted run.
			delay := time.Duration(rng.Int64N(int64(2*time.Millisecond + runTime/5)))
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			var werr error
			killed := false
			if kills < minKills {
				select {
				case werr = <-exited:
				case <-stdout.ready:
					select {
					case werr = <-exited:
					case <-time.After(delay):
						_ = cmd.Process.Signal(syscall.SIGKILL)
						werr = <-exited
						killed = true
					}
				case <-time.After(2 * time.Minute):
					_ = cmd.Process.Signal(syscall.SIGKILL)
					t.Fatalf("round %d: the child did not report ready in 2 minutes", rounds)
				}
			} else {
				werr = <-exited
			}
			var ee *exec.ExitError
			if killed && errors.As(werr, &ee) && ee.Sys().(syscall.WaitStatus).Signaled() {
				kills++
				roundKills++
				where = append(where, progress(t, dir))
				continue
			}
			if werr != nil {
				t.Fatalf("round %d attempt %d: child failed: %v\n%s", rounds, attempt, werr, stderr.String())
			}
			break // completed
		}
		st, err := sqlite.Open(filepath.Join(dir, "sessions.db"))
		if err != nil {
			t.Fatal(err)
		}
		got := outcomeOf(t, st)
		st.Close()
		if !reflect.DeepEqual(want, got) {
			wb, _ := json.MarshalIndent(want, "", " ")
			gb, _ := json.MarshalIndent(got, "", " ")
			t.Fatalf("round %d (%d kills): outcome differs from the uninterrupted run\nwant %s\ngot  %s", rounds, roundKills, wb, gb)
		}
		checkLedger(t, dir, roundKills)
		t.Logf("round %d: %d kills, outcome identical to the uninterrupted run", rounds, roundKills)
	}
	t.Logf("%d kills in %d rounds; latest checkpoint after each: %s", kills, rounds, strings.Join(where, " "))
	mid := 0
	for _, w := range where {
		if w != "none" {
			mid++
		}
	}
	if mid < minKills/4 {
		t.Errorf("only %d of %d kills struck after the first checkpoint: the kills are too early to test resuming", mid, kills)
	}
}

// progress describes the latest checkpoint in dir: "none", "S" (after step
// S-1) or "S+R" (step S interrupted with R tool results saved).
func progress(t *testing.T, dir string) string {
	st, err := sqlite.Open(filepath.Join(dir, "sessions.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cp, err := st.Latest(context.Background(), sessionID)
	if errors.Is(err, session.ErrNotFound) {
		return "none"
	}
	if err != nil {
		t.Fatalf("after a kill: %v", err)
	}
	if cp.Pending != nil {
		return fmt.Sprintf("%d+%d", cp.Step, len(cp.Pending.Results))
	}
	return fmt.Sprint(cp.Step)
}

// checkLedger checks that every call was executed exactly once, and that
// calls were invoked again at most once per kill (the kill having struck
// between the tool's execution and the checkpoint of its result).
func checkLedger(t *testing.T, dir string, kills int) {
	t.Helper()
	count := func(name string) map[string]int {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		n := map[string]int{}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			id, _, _ := strings.Cut(sc.Text(), "\t")
			n[id]++
		}
		return n
	}
	executed := count("ledger")
	if len(executed) != 2*steps {
		t.Errorf("%d distinct calls executed, want %d", len(executed), 2*steps)
	}
	for id, n := range executed {
		if n != 1 {
			t.Errorf("call %s executed %d times", id, n)
		}
	}
	again := 0
	for _, n := range count("attempts") {
		again += n - 1
	}
	// A kill can strike while both calls of a step ran but before either
	// result was saved.
	if again > 2*kills {
		t.Errorf("%d repeated invocations for %d kills", again, kills)
	}
}
