package runtime_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
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
	"github.com/reprompt/reprompt/snapshots"
)

func echoPrompt(p *prompt.Prompt) error {
	prompt.DefTool(p, "echo", "repeat", func(ctx context.Context, a struct {
		Text string `json:"text"`
	}) (string, error) {
		return a.Text, nil
	})
	p.User("go")
	return nil
}

// timedModel records when each request reached its model: in a synctest
// bubble, the fake clock's time.
type timedModel struct {
	llm.Model
	mu sync.Mutex
	at []time.Time
}

func (m *timedModel) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	m.mu.Lock()
	m.at = append(m.at, time.Now())
	m.mu.Unlock()
	return m.Model.Generate(ctx, req)
}

// gaps returns the time between consecutive requests.
func (m *timedModel) gaps() []time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []time.Duration
	for i := 1; i < len(m.at); i++ {
		out = append(out, m.at[i].Sub(m.at[i-1]))
	}
	return out
}

// TestRetriesRetryableModelErrors runs in a synctest bubble: the backoff
// waits take no real time, and their lengths are exact.
func TestRetriesRetryableModelErrors(t *testing.T) {
	busy := &llm.ModelError{StatusCode: 429, Retryable: true, Message: "slow down"}
	synctest.Test(t, func(t *testing.T) {
		script := snapshots.Script(snapshots.Fail(busy), snapshots.Fail(busy), snapshots.Text("ok"))
		m := &timedModel{Model: script}
		res, err := runtime.Run(context.Background(), m, echoPrompt, runtime.Config{Retries: 2}) // RetryBackoff 0: one second
		require.NoError(t, err)
		require.Equal(t, "ok", res.Text, "text after the retries")
		require.Len(t, script.Requests(), 3, "requests: the first and two retries")
		// Retry n waits between half and all of RetryBackoff·2ⁿ (jitter).
		gaps := m.gaps()
		for n, gap := range gaps {
			full := time.Second << n
			assert.GreaterOrEqual(t, gap, full/2, "wait before retry %d", n+1)
			assert.LessOrEqual(t, gap, full, "wait before retry %d", n+1)
		}
		assert.Len(t, gaps, 2, "waits")
	})

	// Not retryable, or out of retries: the error ends the run and still
	// unwraps to the model's error.
	for name, tc := range map[string]struct {
		replies []snapshots.Reply
		retries int
	}{
		"not retryable":   {[]snapshots.Reply{snapshots.Fail(&llm.ModelError{StatusCode: 400, Message: "bad"}), snapshots.Text("never")}, 3},
		"out of attempts": {[]snapshots.Reply{snapshots.Fail(busy), snapshots.Fail(busy), snapshots.Text("never")}, 1},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := snapshots.Script(tc.replies...)
				_, err := runtime.Run(context.Background(), m, echoPrompt, runtime.Config{Retries: tc.retries, RetryBackoff: time.Minute})
				var me *llm.ModelError
				var se *runtime.StepError
				require.ErrorAs(t, err, &me, "want the *ModelError wrapped")
				require.ErrorAs(t, err, &se, "want a *StepError")
				require.Equal(t, runtime.OpModel, se.Op, "StepError.Op")
				require.Equal(t, 0, se.Step, "StepError.Step")
				assert.Len(t, m.Requests(), min(tc.retries+1, len(tc.replies)-1), "requests")
			})
		})
	}
}

// TestRetryWaitEndsWithContext: cancelling the run during a backoff wait
// ends it at once, with the model's error and the context's.
func TestRetryWaitEndsWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		busy := &llm.ModelError{StatusCode: 503, Retryable: true, Message: "busy"}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		m := snapshots.Script(snapshots.Fail(busy), snapshots.Text("never"))
		start := time.Now()
		_, err := runtime.Run(ctx, m, echoPrompt, runtime.Config{Retries: 1, RetryBackoff: time.Hour})
		require.ErrorIs(t, err, busy, "want the model's error")
		require.ErrorIs(t, err, context.DeadlineExceeded, "want the context's error")
		assert.Equal(t, time.Minute, time.Since(start), "time until the run ended, want the context's minute")
		assert.Len(t, m.Requests(), 1, "requests")
	})
}

// blockingModel blocks until its context is done.
type blockingModel struct{}

func (blockingModel) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestModelTimeout runs in a synctest bubble: the timeout is reached in
// fake time, exactly.
func TestModelTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		_, err := runtime.Run(context.Background(), blockingModel{}, echoPrompt, runtime.Config{ModelTimeout: time.Minute})
		require.ErrorIs(t, err, context.DeadlineExceeded, "want a deadline error")
		assert.Equal(t, time.Minute, time.Since(start), "time until the model call was cut short, want ModelTimeout")
	})
}

// TestToolTimeoutIsAnErrorResult runs in a synctest bubble: the timeout is
// reached in fake time, and the bubble checks that the abandoned tool's
// goroutine ends once the tool returns.
func TestToolTimeoutIsAnErrorResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		fn := func(p *prompt.Prompt) error {
			prompt.DefTool(p, "stuck", "never returns in time", func(ctx context.Context, _ struct{}) (string, error) {
				<-release // ignores ctx, as a badly written tool would
				return "late", nil
			})
			p.User("go")
			return nil
		}
		m := snapshots.Script(snapshots.CallTool("stuck", nil), snapshots.Text("gave up"))
		start := time.Now()
		res, err := runtime.Run(context.Background(), m, fn, runtime.Config{ToolTimeout: 30 * time.Second})
		require.NoError(t, err)
		assert.Equal(t, 30*time.Second, time.Since(start), "time the run took, want ToolTimeout")
		r := res.Steps[0].ToolResults[0]
		var te *runtime.ToolTimeoutError
		if assert.ErrorAs(t, res.Steps[0].ToolErrors[r.CallID], &te, "ToolErrors[%s]", r.CallID) {
			assert.Equal(t, runtime.ToolTimeoutError{Tool: "stuck", Timeout: "30s"}, *te, "ToolErrors[%s]", r.CallID)
		}
		// What the model reads is the contract here: the tool and the limit.
		require.True(t, r.IsError, "result %+v: IsError", r)
		require.Contains(t, r.Content, `tool "stuck" did not finish within 30s`, "the timeout error result names the tool")
		assert.Equal(t, "gave up", res.Text, "the run did not go on after the timeout")
	})
}

// TestCancelMidToolLeavesAResumableCheckpoint cancels the run while a tool
// runs: the latest checkpoint holds the pending step, and Resume completes
// it without running the finished call again.
func TestCancelMidToolLeavesAResumableCheckpoint(t *testing.T) {
	store := session.NewMemory()
	cfg := runtime.Config{Store: store, SessionID: "cancel"}
	ctx, cancel := context.WithCancel(context.Background())
	var fastRuns, slowRuns atomic.Int32
	fastDone := make(chan struct{})
	fn := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "fast", "returns at once", func(ctx context.Context, _ struct{}) (string, error) {
			if fastRuns.Add(1) == 1 {
				close(fastDone)
			}
			return "fast done", nil
		})
		prompt.DefTool(p, "slow", "waits for cancellation", func(ctx context.Context, _ struct{}) (string, error) {
			slowRuns.Add(1)
			<-fastDone
			cancel()
			<-ctx.Done()
			return "", ctx.Err()
		})
		p.User("go")
		return nil
	}
	m := snapshots.Script(snapshots.CallTools(snapshots.Call{ID: "f", Name: "fast"}, snapshots.Call{ID: "s", Name: "slow"}))
	_, err := runtime.Run(ctx, m, fn, cfg)
	require.ErrorIs(t, err, context.Canceled)
	cp, err := store.Latest(context.Background(), "cancel")
	require.NoError(t, err)
	require.NotNil(t, cp.Pending, "latest checkpoint: Pending, want the step with the fast call's result only")
	require.Len(t, cp.Pending.Results, 1, "latest checkpoint pending = %+v, want the step with the fast call's result only", cp.Pending)
	require.Equal(t, "f", cp.Pending.Results[0].CallID, "latest checkpoint pending = %+v, want the step with the fast call's result only", cp.Pending)
	require.NoError(t, runtime.ValidateMessages(cp.Transcript), "checkpoint transcript invalid")

	r, err := runtime.Resume(context.Background(), snapshots.Script(snapshots.Text("done")), fn, cfg)
	require.NoError(t, err)
	res, err := r.Run(context.Background())
	require.NoError(t, err)
	first := res.Steps[0]
	require.True(t, first.Resumed, "resumed step: Resumed")
	require.Len(t, first.Interrupted, 1, "resumed step: Interrupted, want the slow call")
	require.Equal(t, "s", first.Interrupted[0], "resumed step: Interrupted, want the slow call")
	assert.Equal(t, int32(1), fastRuns.Load(), "runs of the fast tool")
	assert.Equal(t, int32(1), slowRuns.Load(), "runs of the slow tool")
	want := []defs.Role{defs.RoleUser, defs.RoleAssistant, defs.RoleTool, defs.RoleTool, defs.RoleAssistant}
	var got []defs.Role
	for _, msg := range res.Transcript {
		got = append(got, msg.Role)
	}
	require.Len(t, got, len(want), "transcript roles %v, want %v", got, want)
}

func TestPanicsNameTheirSite(t *testing.T) {
	fn := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "boom", "panics", func(ctx context.Context, _ struct{}) (string, error) {
			var m map[string]int
			//lint:ignore SA5000 the runtime panic of a nil map write is what this test needs
			m["x"] = 1
			return "", nil
		})
		p.User("go")
		return nil
	}
	res, err := runtime.Run(context.Background(), snapshots.Script(snapshots.CallTool("boom", nil), snapshots.Text("ok")), fn, runtime.Config{})
	require.NoError(t, err)
	r := res.Steps[0].ToolResults[0]
	require.True(t, r.IsError, "result %q: IsError", r.Content)
	require.Contains(t, r.Content, `tool "boom" panicked: `, "the result names the tool")
	require.Contains(t, r.Content, "nil map", "the result names the panic's value")
	// Issue 8 item 15: the model is not shown a Go source location; the
	// step record keeps it.
	assert.NotContains(t, r.Content, ".go:", "the result shows the model a source location")
	var pe *runtime.ToolPanicError
	if assert.ErrorAs(t, res.Steps[0].ToolErrors[r.CallID], &pe, "ToolErrors[%s]", r.CallID) {
		assert.True(t, strings.HasPrefix(pe.Site, "faults_test.go:"), "ToolPanicError.Site %q, want faults_test.go", pe.Site)
	}
}

func TestRecoveryKeepsTheStepsViews(t *testing.T) {
	fn := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "safe", "s", func(ctx context.Context, _ struct{}) (string, error) { return "", nil })
		prompt.DefTool(p, "dangerous", "d", func(ctx context.Context, _ struct{}) (string, error) { return "", nil })
		p.Effect(effects.Always, func(ctx context.Context, s *effects.Step) error {
			s.LimitTools("safe")
			s.AppendMessages(defs.UserMessage("wrap up"))
			return nil
		})
		p.Effect(effects.Always, func(ctx context.Context, s *effects.Step) error {
			if s.ContextTooLong {
				s.CommitMessages([]defs.Message{defs.UserMessage("short")})
			}
			return nil
		}, effects.Recovery())
		p.User("a very long task")
		return nil
	}
	tooLong := &llm.ModelError{StatusCode: 400, ContextTooLong: true, Message: "context_length_exceeded"}
	m := snapshots.Script(snapshots.Fail(tooLong), snapshots.Text("ok"))
	res, err := runtime.Run(context.Background(), m, fn, runtime.Config{})
	require.NoError(t, err)
	assert.True(t, res.Steps[0].Recovered, "step 0 not marked Recovered")
	reqs := m.Requests()
	require.Len(t, reqs, 2, "requests")
	var got []string
	for _, msg := range reqs[1].Messages {
		got = append(got, msg.Content)
	}
	assert.Empty(t, cmp.Diff([]string{"short", "wrap up"}, got), "resent messages mismatch (-want +got)")
	if assert.Len(t, reqs[1].Tools, 1, "resent tools, want only safe") {
		assert.Equal(t, "safe", reqs[1].Tools[0].Name, "resent tool")
	}
}

func TestSubAgentUsageCountsInTheParent(t *testing.T) {
	u := &llm.Usage{InputTokens: 1000, OutputTokens: 10}
	fn := func(p *prompt.Prompt) error {
		p.DefAgent("helper", "does a sub-task", func(p *prompt.Prompt) error { return nil })
		p.User("delegate")
		return nil
	}
	m := snapshots.Script(
		snapshots.Reply{Calls: []snapshots.Call{{Name: "helper", Args: map[string]string{"task": "sub"}}}, Usage: u},
		snapshots.Reply{Text: "sub done", Usage: u}, // the sub-agent's only step
		snapshots.Reply{Text: "all done", Usage: u},
	)
	res, err := runtime.Run(context.Background(), m, fn, runtime.Config{Pricing: llm.Pricing{Input: 1, Output: 1}})
	require.NoError(t, err)
	assert.Equal(t, 3000, res.Usage.InputTokens, "Usage.InputTokens (the sub-agent's call included)")
	assert.Equal(t, 30, res.Usage.OutputTokens, "Usage.OutputTokens (the sub-agent's call included)")
	assert.InDelta(t, 3030.0/1e6, res.Stats.Cost, 1e-12, "Stats.Cost")
	assert.Equal(t, 2, res.Stats.Steps, "Stats.Steps, want the parent's")
}

func TestPanickingStopWhenIsAnError(t *testing.T) {
	cfg := runtime.Config{StopWhen: func(last *runtime.Step) bool {
		var s []int
		return s[3] == 0 // index out of range
	}}
	_, err := runtime.Run(context.Background(), snapshots.Script(snapshots.CallTool("echo", map[string]string{"text": "x"}), snapshots.Text("ok")), echoPrompt, cfg)
	var pe *runtime.PanicError
	require.ErrorAs(t, err, &pe)
	require.Contains(t, pe.Site, "faults_test.go:", "PanicError.Site")
	require.Equal(t, 0, pe.Step, "PanicError.Step")
}
