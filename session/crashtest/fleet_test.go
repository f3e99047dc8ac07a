package crashtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/session/sqlite"
)

const (
	fleetEnv    = "REPROMPT_CRASHTEST_FLEET"   // the worker's index
	fleetLine   = "crashtest: fleet "          // followed by the worker's figures, as JSON
	fleetSizeEv = "REPROMPT_CRASHTEST_WORKERS" // the number of workers, 48 unless set
)

// fleetFigures are what a fleet worker reports: its saves' durations
// (the wait for the write lock included), in microseconds, and its run's
// wall time.
type fleetFigures struct {
	SavesUS []int64 `json:"saves_us"`
	WallUS  int64   `json:"wall_us"`
}

// timedStore records the duration of each Save.
type timedStore struct {
	session.Store
	mu    sync.Mutex
	saves []int64
}

func (s *timedStore) Save(ctx context.Context, cp *session.Checkpoint) error {
	start := time.Now()
	err := s.Store.Save(ctx, cp)
	s.mu.Lock()
	s.saves = append(s.saves, time.Since(start).Microseconds())
	s.mu.Unlock()
	return err
}

// fleetSteps is the number of steps that call tools in a fleet worker's
// run: 120 unless REPROMPT_CRASHTEST_FLEET_STEPS says otherwise.
var fleetSteps = func() int {
	if n, err := strconv.Atoi(os.Getenv("REPROMPT_CRASHTEST_FLEET_STEPS")); err == nil && n > 0 {
		return n
	}
	return 120
}()

// fleetModel calls "add" twice in parallel at each of fleetSteps steps,
// then answers.
type fleetModel struct{}

func (fleetModel) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	k := 0
	for _, m := range req.Messages {
		if m.Role == defs.RoleAssistant {
			k++
		}
	}
	usage := llm.Usage{InputTokens: 100 + k, OutputTokens: 10}
	if k >= fleetSteps {
		return &llm.Reply{Message: defs.AssistantMessage(fmt.Sprintf("done after %d steps", k)), Usage: usage}, nil
	}
	calls := []defs.ToolCall{
		{ID: fmt.Sprintf("s%d-a", k), Name: "add", Arguments: json.RawMessage(fmt.Sprintf(`{"n":%d}`, k))},
		{ID: fmt.Sprintf("s%d-b", k), Name: "add", Arguments: json.RawMessage(fmt.Sprintf(`{"n":%d}`, 100+k))},
	}
	return &llm.Reply{Message: defs.Message{Role: defs.RoleAssistant, Content: fmt.Sprint("step ", k), ToolCalls: calls}, Usage: usage}, nil
}

// fleetAgent adds numbers to its state: a worker does little but save.
func fleetAgent(p *prompt.Prompt) error {
	total, setTotal := prompt.State(p, "total", 0)
	p.DefSystem("role", "You add numbers.")
	p.Def("total", fmt.Sprint(total))
	prompt.DefTool(p, "add", "add n to the total", func(ctx context.Context, args struct {
		N int `json:"n"`
	}) (string, error) {
		setTotal.Update(ctx, func(v int) int { return v + args.N })
		return fmt.Sprint("total ", args.N), nil
	})
	p.User("Add the numbers.")
	return nil
}

// fleetChild runs the session of worker i to its end on the database in
// dir, saving after every step, reply and result, and prints its figures.
func fleetChild(dir, i string) error {
	ctx := context.Background()
	st, err := sqlite.Open(filepath.Join(dir, "sessions.db"))
	if err != nil {
		return err
	}
	defer st.Close()
	ts := &timedStore{Store: st}
	start := time.Now()
	_, err = runtime.Run(ctx, fleetModel{}, fleetAgent, runtime.Config{Store: ts, SessionID: "fleet-" + i, MaxSteps: fleetSteps + 5})
	if err != nil {
		return err
	}
	b, err := json.Marshal(fleetFigures{SavesUS: ts.saves, WallUS: time.Since(start).Microseconds()})
	if err != nil {
		return err
	}
	fmt.Println(fleetLine + string(b))
	return nil
}

// TestFleetSQLite runs 48 worker processes (REPROMPT_CRASHTEST_WORKERS to
// change it) at once, each a session of its own on one SQLite file,
// saving after every step, reply and result (fleetSteps steps): the
// file's write lock is contended all along. Every run must finish: a save waits for the lock
// (within sqlite.Config.LockWait) rather than fail. It logs the
// distribution of the saves' durations.
func TestFleetSQLite(t *testing.T) {
	if testing.Short() {
		t.Skip("starts many processes")
	}
	n := 48
	if s := os.Getenv(fleetSizeEv); s != "" {
		var err error
		n, err = strconv.Atoi(s)
		require.NoError(t, err, "%s", fleetSizeEv)
	}
	dir := t.TempDir()
	st, err := sqlite.Open(filepath.Join(dir, "sessions.db")) // the tables, before the workers start
	require.NoError(t, err)
	require.NoError(t, st.Close())

	type result struct {
		out, errs strings.Builder
		err       error
	}
	results := make([]*result, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		r := &result{}
		results[i] = r
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), childEnv+"="+dir, fleetEnv+"="+strconv.Itoa(i))
		cmd.Stdout, cmd.Stderr = &r.out, &r.errs
		require.NoError(t, cmd.Start())
		wg.Go(func() { r.err = cmd.Wait() })
	}
	wg.Wait()
	wall := time.Since(start)

	var saves []int64
	failed := 0
	for i, r := range results {
		if r.err != nil {
			failed++
			assert.NoError(t, r.err, "worker %d: %s", i, r.errs.String())
			continue
		}
		_, line, ok := strings.Cut(r.out.String(), fleetLine)
		require.True(t, ok, "worker %d printed no figures: %s", i, r.out.String())
		line, _, _ = strings.Cut(line, "\n")
		var f fleetFigures
		require.NoError(t, json.Unmarshal([]byte(line), &f), "worker %d's figures", i)
		saves = append(saves, f.SavesUS...)
	}
	assert.Zero(t, failed, "runs of %d that failed", n)

	st, err = sqlite.Open(filepath.Join(dir, "sessions.db"))
	require.NoError(t, err)
	defer st.Close()
	done := 0
	for i := range n {
		cp, err := st.Latest(context.Background(), "fleet-"+strconv.Itoa(i))
		if errors.Is(err, session.ErrNotFound) {
			continue
		}
		require.NoError(t, err, "worker %d's session", i)
		if cp.Done {
			done++
		}
	}
	assert.Equal(t, n, done, "sessions done")
	slices.Sort(saves)
	pct := func(p float64) time.Duration {
		if len(saves) == 0 {
			return 0
		}
		return time.Duration(saves[min(len(saves)-1, int(p*float64(len(saves))))]) * time.Microsecond
	}
	t.Logf("%d workers, %d failed, %d saves in %v: save median %v, p90 %v, p99 %v, max %v (min %v)",
		n, failed, len(saves), wall.Round(time.Millisecond), pct(0.5), pct(0.9), pct(0.99), pct(1), pct(0))
}
