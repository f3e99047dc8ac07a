package temporal_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/reprompt/reprompt/runtime"
	rt "github.com/reprompt/reprompt/temporal"
)

// The end-to-end tests run against the Temporal server at
// REPROMPT_TEMPORAL_ADDR (`eval "$(bash .ci/temporal.sh)"` starts the
// development server); without it they skip, and with
// REPROMPT_TEMPORAL_REQUIRED=1 they fail instead.
const (
	addrEnv     = "REPROMPT_TEMPORAL_ADDR"
	requiredEnv = "REPROMPT_TEMPORAL_REQUIRED"
	workerEnv   = "REPROMPT_TEMPORAL_WORKER" // set in the worker processes: their task queue
	dirEnv      = "REPROMPT_TEMPORAL_DIR_E2E"
	readyLine   = "temporal e2e: worker ready"
)

func serverAddr(t testing.TB) string {
	t.Helper()
	addr := os.Getenv(addrEnv)
	if addr == "" {
		require.NotEqual(t, "1", os.Getenv(requiredEnv), "%s is not set and %s=1: start a server with eval \"$(bash .ci/temporal.sh)\"", addrEnv, requiredEnv)
		t.Skipf("%s is not set (eval \"$(bash .ci/temporal.sh)\" starts a development server)", addrEnv)
	}
	return addr
}

func dial(t testing.TB, addr string) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: addr, Logger: quiet()})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// quiet logs warnings and errors only.
func quiet() sdklog.Logger {
	return sdklog.NewStructuredLogger(slogWarn())
}

// e2eAgent is the agent of the end-to-end test, as every worker process
// registers it.
func e2eAgent(tl *tools, steps int, slow ...int) rt.Agent {
	return rt.Agent{
		Name:   "inventory",
		Prompt: tl.agent,
		Model:  inventoryModel(steps, slow...),
		Tools: map[string]rt.ToolOptions{
			"slow": {Heartbeat: 2 * time.Second, Retry: &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, MaximumAttempts: 5}},
		},
	}
}

const e2eSteps = 9 // a slow lookup alone at steps 3 and 7

// TestWorkerProcess is the worker process TestE2E starts (twice): it polls
// the task queue named by REPROMPT_TEMPORAL_WORKER until it is killed.
func TestWorkerProcess(t *testing.T) {
	queue := os.Getenv(workerEnv)
	if queue == "" {
		t.Skip("the worker process of TestE2E")
	}
	dir := os.Getenv(dirEnv)
	c := dial(t, serverAddr(t))
	w := worker.New(c, queue, workerOptions())
	tl := &tools{ledger: filepath.Join(dir, "ledger"), marker: filepath.Join(dir, "marker"), delay: time.Minute}
	require.NoError(t, rt.Register(w, e2eAgent(tl, e2eSteps), scaleAgent()))
	require.NoError(t, w.Start())
	fmt.Println(readyLine)
	select {} // until killed
}

// workerOptions are the options of the worker processes: the SDK's
// defaults, unless REPROMPT_TEMPORAL_SLOTS=N bounds the workflow tasks a
// worker holds at once to N (and its activities to 2N). On a small, busy
// machine a worker that polls more workflow tasks than it can run within
// their 10-second timeout makes them time out and run again.
func workerOptions() worker.Options {
	n, _ := strconv.Atoi(os.Getenv("REPROMPT_TEMPORAL_SLOTS"))
	if n <= 0 {
		return worker.Options{}
	}
	return worker.Options{MaxConcurrentWorkflowTaskExecutionSize: n, MaxConcurrentActivityExecutionSize: 2 * n}
}

// startWorker starts the test binary again as a worker process.
func startWorker(t testing.TB, queue, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestWorkerProcess$", "-test.v")
	cmd.Env = append(os.Environ(), workerEnv+"="+queue, dirEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), readyLine) {
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(2 * time.Minute):
		require.Fail(t, "the worker process did not get ready")
	}
	return cmd
}

// Two worker processes; the one running the slow tool call is killed with
// SIGKILL in the middle of it; the other finishes the run, whose transcript
// and state are those of an uninterrupted run, and whose non-idempotent
// tool ran at most once per call.
func TestE2E(t *testing.T) {
	addr := serverAddr(t)
	c := dial(t, addr)
	dir := t.TempDir()
	queue := fmt.Sprintf("reprompt-e2e-%d", time.Now().UnixNano())
	a := startWorker(t, queue, dir)
	b := startWorker(t, queue, dir)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	id := "e2e-" + queue
	run, err := rt.Start(ctx, c, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, rt.Input{Agent: "inventory"})
	require.NoError(t, err)

	// The slow lookup of step 3 writes the pid of its worker, then takes a
	// minute: kill that worker.
	marker := filepath.Join(dir, "marker")
	var pid int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(marker)
		if err != nil || len(b) == 0 {
			return false
		}
		pid, err = strconv.Atoi(string(b))
		return err == nil
	}, time.Minute, 50*time.Millisecond, "the slow tool call did not start")
	require.Contains(t, []int{a.Process.Pid, b.Process.Pid}, pid)
	st, err := rt.Query(ctx, c, id)
	require.NoError(t, err)
	require.Equal(t, 3, st.Step, "killed in step 3")
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	t.Logf("killed worker %d in the middle of a tool call", pid)

	var got rt.Result
	require.NoError(t, run.Get(ctx, &got))

	want := local(t, inventoryModel(e2eSteps), runtime.Config{})
	assert.Empty(t, cmp.Diff(want.Transcript, transcriptOf(&got)), "transcript mismatch (-want +got)")
	assert.Empty(t, cmp.Diff(stateJSON(t, want), decodeState(t, got.State)), "state mismatch (-want +got)")
	require.Equal(t, []string{"o1_1", "o5_5"}, ledgerLines(filepath.Join(dir, "ledger")), "each charge ran once")
	recordHistory(t, c, id, run.GetRunID(), "e2e_failover")
}

// recordHistory writes the history of a workflow run to testdata, where
// TestReplay replays it, when REPROMPT_UPDATE=1 (never when CI is set).
func recordHistory(t *testing.T, c client.Client, id, runID, name string) {
	t.Helper()
	if os.Getenv("REPROMPT_UPDATE") != "1" || os.Getenv("CI") != "" {
		return
	}
	iter := c.GetWorkflowHistory(context.Background(), id, runID, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	h := &historypb.History{}
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		h.Events = append(h.Events, ev)
	}
	out, err := temporalproto.CustomJSONMarshalOptions{Indent: " "}.Marshal(h)
	require.NoError(t, err)
	events := h.Events
	require.NoError(t, os.MkdirAll("testdata", 0o755))
	require.NoError(t, os.WriteFile(filepath.Join("testdata", name+".json"), out, 0o644))
	t.Logf("recorded testdata/%s.json (%d events)", name, len(events))
}

// signalAgent is the agent of TestE2ESignal: it continues as new every 3
// steps.
func signalAgent(tl *tools) rt.Agent {
	return rt.Agent{Name: "talker", Prompt: tl.agent, Model: inventoryModel(5), ContinueAfter: 3}
}

// Against a real server: continue-as-new, a query, and a message that
// continues a run that ended.
func TestE2ESignal(t *testing.T) {
	c := dial(t, serverAddr(t))
	queue := fmt.Sprintf("reprompt-e2e-signal-%d", time.Now().UnixNano())
	w := worker.New(c, queue, worker.Options{})
	tl := &tools{}
	require.NoError(t, rt.Register(w, signalAgent(tl)))
	require.NoError(t, w.Start())
	defer w.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id := "e2e-" + queue
	first, err := rt.Start(ctx, c, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, rt.Input{Agent: "talker", Idle: 3 * time.Second})
	require.NoError(t, err)
	var st *rt.Status
	require.Eventually(t, func() bool {
		st, err = rt.Query(ctx, c, id)
		return err == nil && st.Waiting
	}, time.Minute, 20*time.Millisecond, "the run did not end")
	require.Equal(t, 6, st.Step)
	require.NoError(t, rt.Send(ctx, c, id, "One more thing."))

	run := c.GetWorkflow(ctx, id, "") // the latest run of the chain
	var got rt.Result
	require.NoError(t, run.Get(ctx, &got))
	require.Equal(t, "Done. / One more thing.", got.Text)
	require.Equal(t, 7, got.Steps)

	tl2 := &tools{}
	want, err := runtime.Run(ctx, inventoryModel(5), tl2.agent, runtime.Config{})
	require.NoError(t, err)
	assert.Empty(t, cmp.Diff(stateJSON(t, want), decodeState(t, got.State)), "state mismatch (-want +got)")
	assert.Empty(t, cmp.Diff(want.Transcript, transcriptOf(&got)[:len(want.Transcript)]), "transcript mismatch (-want +got)")
	recordHistory(t, c, id, first.GetRunID(), "e2e_signal_first_run")
	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	require.NoError(t, err)
	recordHistory(t, c, id, desc.WorkflowExecutionInfo.Execution.RunId, "e2e_signal_last_run")
}
