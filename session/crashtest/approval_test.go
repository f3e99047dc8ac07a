package crashtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session/sqlite"
)

const (
	approvalEnv      = "REPROMPT_CRASHTEST_APPROVAL" // the phase a child runs
	approvalCrashEnv = "REPROMPT_CRASHTEST_APPROVAL_CRASH"
	approvalSession  = "approval"
	reportPrefix     = "approval report: "
)

// approvalModel calls three tools in its first reply (read needs no
// approval, pay 500 needs it, close always needs it) and answers once it
// has their results.
type approvalModel struct{}

func (approvalModel) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	for _, m := range req.Messages {
		if m.Role == defs.RoleAssistant {
			return &llm.Reply{Message: defs.AssistantMessage("done")}, nil
		}
	}
	return &llm.Reply{Message: defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{
		{ID: "c1", Name: "read", Arguments: json.RawMessage(`{}`)},
		{ID: "c2", Name: "pay", Arguments: json.RawMessage(`{"amount":500}`)},
		{ID: "c3", Name: "close", Arguments: json.RawMessage(`{}`)},
	}}}, nil
}

// approvalAgent logs every tool invocation to the file runs (synced), and
// with crash set makes pay exit the process hard after logging.
func approvalAgent(dir string, crash bool) prompt.Func {
	runs := filepath.Join(dir, "runs")
	logRun := func(ctx context.Context) {
		if err := appendSync(runs, prompt.CallID(ctx)+"\n"); err != nil {
			panic(err)
		}
	}
	return func(p *prompt.Prompt) error {
		prompt.DefTool(p, "read", "Read.", func(ctx context.Context, _ struct{}) (string, error) {
			logRun(ctx)
			return "read", nil
		})
		prompt.DefTool(p, "pay", "Pay.", func(ctx context.Context, a struct {
			Amount int `json:"amount"`
		}) (string, error) {
			logRun(ctx)
			if crash {
				os.Exit(3) // in the middle of the approved call
			}
			return fmt.Sprint("paid ", a.Amount), nil
		}, prompt.NeedsApprovalIf(func(a struct {
			Amount int `json:"amount"`
		}) bool {
			return a.Amount > 100
		}))
		prompt.DefTool(p, "close", "Close.", func(ctx context.Context, _ struct{}) (string, error) {
			logRun(ctx)
			return "closed", nil
		}, prompt.NeedsApproval())
		p.User("Pay and close.")
		return nil
	}
}

// approvalReport is what a child prints: the calls awaiting a decision
// when it started the phase, and how the run stood when it left.
type approvalReport struct {
	Awaiting []string `json:"awaiting"`
	Paused   []string `json:"paused"`
	Done     bool     `json:"done"`
}

// approvalChild runs one phase of TestApprovalAcrossProcesses and exits:
//
//	start    a new run, until it pauses
//	approve  resume, approve c2, and stop without continuing
//	deny     resume, deny c3, and run to the end (pay exits hard with crash set)
//	finish   resume and run to the end
func approvalChild(dir, phase string) {
	if err := approvalPhase(dir, phase); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	os.Exit(0)
}

func approvalPhase(dir, phase string) error {
	ctx := context.Background()
	st, err := sqlite.Open(filepath.Join(dir, "sessions.db"))
	if err != nil {
		return err
	}
	defer st.Close()
	cfg := runtime.Config{Store: st, SessionID: approvalSession}
	fn := approvalAgent(dir, os.Getenv(approvalCrashEnv) != "")
	var r *runtime.Runner
	if phase == "start" {
		r = runtime.New(approvalModel{}, fn, cfg)
	} else if r, err = runtime.Resume(ctx, approvalModel{}, fn, cfg); err != nil {
		return err
	}
	var rep approvalReport
	for _, a := range r.Awaiting() {
		rep.Awaiting = append(rep.Awaiting, a.CallID)
	}
	switch phase {
	case "approve":
		err = r.Approve("c2")
	case "deny":
		if err = r.Deny("c3", "not today"); err == nil {
			_, err = r.Run(ctx)
		}
	case "start", "finish":
		var res *runtime.Result
		res, err = r.Run(ctx)
		for _, a := range res.Awaiting {
			rep.Paused = append(rep.Paused, a.CallID)
		}
	default:
		err = fmt.Errorf("unknown phase %q", phase)
	}
	if err != nil {
		return err
	}
	cp, err := st.Latest(ctx, approvalSession)
	if err != nil {
		return err
	}
	rep.Done = cp.Done
	b, _ := json.Marshal(rep)
	fmt.Println(reportPrefix + string(b))
	return nil
}

// phase runs a child for phase and returns its report and exit code.
func phase(t *testing.T, dir, phase string, crash bool) (approvalReport, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+dir, approvalEnv+"="+phase)
	if crash {
		cmd.Env = append(cmd.Env, approvalCrashEnv+"=1")
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err, "phase %s", phase)
	}
	require.True(t, code == 0 || code == 3, "phase %s: exit status %d\n%s%s", phase, code, out, stderr.String())
	var rep approvalReport
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), reportPrefix); ok {
			require.NoError(t, json.Unmarshal([]byte(line), &rep))
		}
	}
	return rep, code
}

// TestApprovalAcrossProcesses pauses a run for approvals in one process,
// decides in others, and finishes in yet another, each a new process on
// the same SQLite file. With a crash in the middle of the approved call,
// the call runs once: the resumed run gives it an "interrupted" result.
func TestApprovalAcrossProcesses(t *testing.T) {
	for _, crash := range []bool{false, true} {
		t.Run(fmt.Sprint("crash=", crash), func(t *testing.T) {
			dir := t.TempDir()
			rep, _ := phase(t, dir, "start", false)
			require.Empty(t, cmp.Diff(approvalReport{Paused: []string{"c2", "c3"}}, rep), "start (-want +got)")
			rep, _ = phase(t, dir, "approve", false)
			require.Empty(t, cmp.Diff(approvalReport{Awaiting: []string{"c2", "c3"}}, rep), "approve (-want +got)")
			// The decision of the last process is kept.
			rep, code := phase(t, dir, "deny", crash)
			wantPay := "paid 500"
			if crash {
				require.Equal(t, 3, code, "deny with a crash: exit status %d, want 3", code)
				rep, _ = phase(t, dir, "finish", false)
				wantPay = `error: tool call interrupted: the run stopped before "pay" returned, and it was not run again`
			} else {
				require.Empty(t, cmp.Diff(approvalReport{Awaiting: []string{"c3"}, Done: true}, rep), "deny (-want +got)")
			}
			require.True(t, rep.Done, "the run did not end: %+v", rep)
			st, err := sqlite.Open(filepath.Join(dir, "sessions.db"))
			require.NoError(t, err)
			defer st.Close()
			cp, err := st.Latest(context.Background(), approvalSession)
			require.NoError(t, err)
			var results []string
			for _, m := range cp.Transcript {
				if m.Role == defs.RoleTool {
					results = append(results, m.ToolCallID+": "+m.Content)
				}
			}
			want := []string{"c1: read", "c2: " + wantPay, "c3: not today"}
			assert.Empty(t, cmp.Diff(want, results), "tool results (-want +got)")
			b, err := os.ReadFile(filepath.Join(dir, "runs"))
			require.NoError(t, err)
			assert.Empty(t, cmp.Diff([]string{"c1", "c2"}, strings.Fields(string(b))), "tool invocations over all processes: each call at most once, close never (-want +got)")
			assert.True(t, cp.Pending == nil && cp.Version == 1, "final checkpoint: pending %v, version %d", cp.Pending, cp.Version)
		})
	}
}
