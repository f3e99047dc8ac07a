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
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/session/sqlite"
)

const (
	sessionID = "crash"
	steps     = 30 // model steps that call tools before the final answer
	childEnv  = "REPROMPT_CRASHTEST_CHILD"
	markEnv   = "REPROMPT_CRASHTEST_MARK"
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
// parallel (and, with mark set, the non-idempotent "mark" as well), then
// answers with what it read.
type model struct{ mark bool }

func (md model) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
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
	usage := llm.Usage{InputTokens: 100 + k, OutputTokens: 10}
	if k >= steps {
		return &llm.Reply{Message: defs.AssistantMessage(fmt.Sprintf("done after %d steps, checksum %d", k, sum)), Usage: usage}, nil
	}
	calls := []defs.ToolCall{
		{ID: fmt.Sprintf("s%d-a", k), Name: "add", Arguments: json.RawMessage(fmt.Sprintf(`{"n":%d}`, k))},
		{ID: fmt.Sprintf("s%d-b", k), Name: "add", Arguments: json.RawMessage(fmt.Sprintf(`{"n":%d}`, 100+k))},
	}
	if md.mark {
		calls = append(calls, defs.ToolCall{ID: fmt.Sprintf("s%d-m", k), Name: "mark", Arguments: json.RawMessage(`{}`)})
	}
	return &llm.Reply{Message: defs.Message{Role: defs.RoleAssistant, Content: fmt.Sprint("step ", k), ToolCalls: calls}, Usage: usage}, nil
}

// ledger records executed tool calls in a file, one "id<TAB>result" line
// each, synced before the tool returns. A call whose id is in the ledger is
// not executed again: its recorded result is returned (the idempotency key
// pattern of prompt.CallID). Every invocation is also logged to attempts.
type ledger struct {
	mu       sync.Mutex
	path     string
	attempts string
	marks    string // invocations of "mark"
}

func newLedger(dir string) *ledger {
	return &ledger{path: filepath.Join(dir, "ledger"), attempts: filepath.Join(dir, "attempts"), marks: filepath.Join(dir, "marks")}
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

// agent is the prompt: state "total" updated by the tool "add", an effect
// that counts the changes of "total" in state "changes", and a declared
// message. "add" changes the state and then sleeps, so that kills strike
// between a call's state change and its result. With mark set, the
// non-idempotent tool "mark" appends its call id to state "marked", logs
// the invocation and sleeps.
func agent(l *ledger, mark bool) prompt.Func {
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
			setTotal.Update(ctx, func(v int) int { return v + args.N })
			if args.N >= 100 {
				// The second call of a step sleeps after its change: at
				// every third step the first call finishes meanwhile.
				time.Sleep(3 * time.Millisecond)
			}
			return res, nil
		}, prompt.Idempotent())
		if mark {
			_, setMarked := prompt.State(p, "marked", []string{})
			prompt.DefTool(p, "mark", "mark the step", func(ctx context.Context, _ struct{}) (string, error) {
				id := prompt.CallID(ctx)
				if err := appendSync(l.marks, id+"\n"); err != nil {
					return "", err
				}
				setMarked.Update(ctx, func(m []string) []string { return append(slices.Clone(m), id) })
				time.Sleep(2 * time.Millisecond)
				return "marked", nil
			})
		}
		p.Effect(effects.On(total), func(ctx context.Context, s *effects.Step) error {
			setChanges.Update(ctx, func(v int) int { return v + 1 })
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
	if phase := os.Getenv(approvalEnv); phase != "" {
		approvalChild(dir, phase) // approval_test.go; exits
	}
	if os.Getenv(convEnv) != "" {
		convChild(dir) // conversation_test.go; exits
	}
	if i := os.Getenv(fleetEnv); i != "" { // fleet_test.go
		if err := fleetChild(dir, i); err != nil {
			fmt.Fprintln(os.Stderr, "fleet worker:", err)
			os.Exit(2)
		}
		return
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
	l := newLedger(dir)
	mark := os.Getenv(markEnv) != ""
	cfg := runtime.Config{Store: st, SessionID: sessionID, MaxSteps: steps + 5}
	if cp, err := st.Latest(ctx, sessionID); err == nil && cp.Done {
		return nil // finished before the last kill struck
	}
	var md llm.Model = model{mark}
	fn := agent(l, mark)
	if os.Getenv(compactEnv) != "" { // compact_test.go
		md, fn = compactModel{}, compactAgent(l)
	}
	r, err := runtime.Resume(ctx, md, fn, cfg)
	if errors.Is(err, session.ErrNotFound) {
		r, err = runtime.New(md, fn, cfg), nil
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
	require.NoError(t, err)
	var state map[string]any
	require.NoError(t, json.Unmarshal(cp.State, &state))
	return outcome{Transcript: cp.Transcript, State: state, Done: cp.Done}
}

// TestCrashResume kills the child with SIGKILL at random moments (seeded;
// set REPROMPT_CRASH_SEED to replay), at least 50 times, resuming it after
// each kill until it completes, and compares the outcome with an
// uninterrupted run. Every reply has two parallel calls of the idempotent
// "add", which changes state and then sleeps: a call's state change must
// be checkpointed with its result, never before, or a resumed run would
// apply it twice.
func TestCrashResume(t *testing.T) {
	if testing.Short() {
		t.Skip("starts many processes")
	}
	rng := crashRNG(t)
	want, runTime := uninterrupted(t, false)
	crashRounds(t, rng, false, 50, runTime, func(round, kills int, dir string, got outcome) {
		require.Equal(t, want, got, "round %d (%d kills): outcome differs from the uninterrupted run", round, kills)
		checkLedger(t, dir, kills)
	})
}

// TestCrashResumeNonIdempotent adds a third parallel call to every reply,
// of the non-idempotent "mark", which changes state and then sleeps. A call
// of it interrupted by a kill is not run again but gets an "interrupted"
// result; its state change must be gone with its result. So at the end the
// state holds exactly the marks of the calls whose result is "marked", and
// no call of "mark" ran twice.
func TestCrashResumeNonIdempotent(t *testing.T) {
	if testing.Short() {
		t.Skip("starts many processes")
	}
	rng := crashRNG(t)
	_, runTime := uninterrupted(t, true)
	interrupted := 0
	crashRounds(t, rng, true, 20, runTime, func(round, kills int, dir string, got outcome) {
		var marked []string
		for _, m := range got.Transcript {
			if m.Role == defs.RoleTool && m.Name == "mark" {
				switch {
				case m.Content == "marked" && !m.IsError:
					marked = append(marked, m.ToolCallID)
				case m.IsError && strings.Contains(m.Content, "interrupted"):
					interrupted++
				default:
					assert.Fail(t, fmt.Sprintf("round %d: mark call %s got %q", round, m.ToolCallID, m.Content))
				}
			}
		}
		var inState []string
		for _, v := range got.State["marked"].([]any) {
			inState = append(inState, v.(string))
		}
		require.Empty(t, cmp.Diff(marked, inState), "round %d (%d kills): state \"marked\" differs from the calls whose result is \"marked\" (-results +state)", round, kills)
		b, err := os.ReadFile(filepath.Join(dir, "marks"))
		require.NoError(t, err)
		runs := map[string]int{}
		for id := range strings.FieldsSeq(string(b)) {
			runs[id]++
			assert.LessOrEqual(t, runs[id], 1, "round %d: non-idempotent call %s ran twice", round, id)
		}
	})
	t.Logf("%d calls of mark were interrupted by kills", interrupted)
}

func crashRNG(t *testing.T) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("REPROMPT_CRASH_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (REPROMPT_CRASH_SEED=%d to replay)", seed, seed)
	return rand.New(rand.NewPCG(seed, 0))
}

// uninterrupted runs the session in this process, on its own database, and
// returns its outcome and how long it took.
func uninterrupted(t *testing.T, mark bool) (outcome, time.Duration) {
	refDir := t.TempDir()
	ref, err := sqlite.Open(filepath.Join(refDir, "sessions.db"))
	require.NoError(t, err)
	defer ref.Close()
	start := time.Now()
	_, err = runtime.Run(context.Background(), model{mark}, agent(newLedger(refDir), mark), runtime.Config{Store: ref, SessionID: sessionID, MaxSteps: steps + 5})
	require.NoError(t, err)
	runTime := time.Since(start)
	want := outcomeOf(t, ref)
	calls := 2
	if mark {
		calls = 3
	}
	require.True(t, want.Done, "uninterrupted run: done %t, %d messages", want.Done, len(want.Transcript))
	require.Len(t, want.Transcript, 1+(1+calls)*steps+1, "uninterrupted run: done %t, %d messages", want.Done, len(want.Transcript))
	return want, runTime
}

// crashRounds runs rounds of the child, each on a new database, killing it
// at random moments and starting it again until it completes, until
// minKills kills struck; check gets the outcome of each round.
func crashRounds(t *testing.T, rng *rand.Rand, mark bool, minKills int, runTime time.Duration, check func(round, kills int, dir string, got outcome)) {
	kills, rounds := 0, 0
	var where []string // the latest checkpoint after each kill
	for kills < minKills {
		rounds++
		dir := t.TempDir()
		roundKills := 0
		for attempt := 0; ; attempt++ {
			require.LessOrEqual(t, attempt, 2000, "round %d: no completion after %d attempts", rounds, attempt)
			cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), childEnv+"="+dir)
			if mark {
				cmd.Env = append(cmd.Env, markEnv+"=1")
			}
			var stderr strings.Builder
			stdout := &readyWriter{ready: make(chan struct{})}
			cmd.Stderr, cmd.Stdout = &stderr, stdout
			require.NoError(t, cmd.Start())
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
					require.Fail(t, fmt.Sprintf("round %d: the child did not report ready in 2 minutes", rounds))
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
			require.NoError(t, werr, "round %d attempt %d: child failed: %v\n%s", rounds, attempt, werr, stderr.String())
			break // completed
		}
		st, err := sqlite.Open(filepath.Join(dir, "sessions.db"))
		require.NoError(t, err)
		got := outcomeOf(t, st)
		st.Close()
		check(rounds, roundKills, dir, got)
		t.Logf("round %d: %d kills, outcome checked", rounds, roundKills)
	}
	t.Logf("%d kills in %d rounds; latest checkpoint after each: %s", kills, rounds, strings.Join(where, " "))
	mid, inStep := 0, 0
	for _, w := range where {
		if w != "none" {
			mid++
		}
		if strings.Contains(w, "+") {
			inStep++
		}
	}
	assert.GreaterOrEqual(t, mid, minKills/4, "only %d of %d kills struck after the first checkpoint: the kills are too early to test resuming", mid, kills)
	assert.NotZero(t, inStep, "no kill struck while tool calls were running: the test did not test them")
}

// progress describes the latest checkpoint in dir: "none", "S" (after step
// S-1) or "S+R" (step S interrupted with R tool results saved).
func progress(t *testing.T, dir string) string {
	st, err := sqlite.Open(filepath.Join(dir, "sessions.db"))
	require.NoError(t, err)
	defer st.Close()
	cp, err := st.Latest(context.Background(), sessionID)
	if errors.Is(err, session.ErrNotFound) {
		return "none"
	}
	require.NoError(t, err, "after a kill")
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
		require.NoError(t, err)
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
	assert.Len(t, executed, 2*steps, "%d distinct calls executed, want %d", len(executed), 2*steps)
	for id, n := range executed {
		assert.Equal(t, 1, n, "call %s executed %d times", id, n)
	}
	again := 0
	for _, n := range count("attempts") {
		again += n - 1
	}
	// A kill can strike while both calls of a step ran but before either
	// result was saved.
	assert.LessOrEqual(t, again, 2*kills, "%d repeated invocations for %d kills", again, kills)
}
