package runtime_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

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
		if err != nil {
			t.Fatal(err)
		}
		if res.Text != "ok" || len(script.Requests()) != 3 {
			t.Fatalf("text %q after %d requests, want ok after 3", res.Text, len(script.Requests()))
		}
		// Retry n waits between half and all of RetryBackoff·2ⁿ (jitter).
		gaps := m.gaps()
		for n, gap := range gaps {
			if full := time.Second << n; gap < full/2 || gap > full {
				t.Errorf("wait before retry %d = %v, want between %v and %v", n+1, gap, full/2, full)
			}
		}
		if len(gaps) != 2 {
			t.Errorf("%d waits, want 2", len(gaps))
		}
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
				if !errors.As(err, &me) || !errors.As(err, &se) || se.Op != runtime.OpModel || se.Step != 0 {
					t.Fatalf("err = %v, want a *StepError of op model wrapping the *ModelError", err)
				}
				if want := min(tc.retries+1, len(tc.replies)-1); len(m.Requests()) != want {
					t.Errorf("%d requests, want %d", len(m.Requests()), want)
				}
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
		if !errors.Is(err, busy) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want the model's error and the context's", err)
		}
		if d := time.Since(start); d != time.Minute {
			t.Errorf("the run ended after %v, want the context's minute", d)
		}
		if len(m.Requests()) != 1 {
			t.Errorf("%d requests, want 1", len(m.Requests()))
		}
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
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want a deadline error", err)
		}
		if d := time.Since(start); d != time.Minute {
			t.Errorf("the model call was cut short after %v, want ModelTimeout, a minute", d)
		}
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
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 30*time.Second {
			t.Errorf("the run took %v, want ToolTimeout, 30s", d)
		}
		r := res.Steps[0].ToolResults[0]
		var te *runtime.ToolTimeoutError
		if !errors.As(res.Steps[0].ToolErrors[r.CallID], &te) || *te != (runtime.ToolTimeoutError{Tool: "stuck", Timeout: "30s"}) {
			t.Errorf("ToolErrors[%s] = %v, want a *ToolTimeoutError for stuck after 30s", r.CallID, res.Steps[0].ToolErrors[r.CallID])
		}
		// What the model reads is the contract here: the tool and the limit.
		if !r.IsError || !strings.Contains(r.Content, `tool "stuck" did not finish within 30s`) {
			t.Fatalf("result %+v, want a timeout error result naming the tool", r)
		}
		if res.Text != "gave up" {
			t.Errorf("the run did not go on after the timeout: %q", res.Text)
		}
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
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	cp, err := store.Latest(context.Background(), "cancel")
	if err != nil {
		t.Fatal(err)
	}
	if cp.Pending == nil || len(cp.Pending.Results) != 1 || cp.Pending.Results[0].CallID != "f" {
		t.Fatalf("latest checkpoint pending = %+v, want the step with the fast call's result only", cp.Pending)
	}
	if err := runtime.ValidateMessages(cp.Transcript); err != nil {
		t.Fatalf("checkpoint transcript invalid: %v", err)
	}

	r, err := runtime.Resume(context.Background(), snapshots.Script(snapshots.Text("done")), fn, cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	first := res.Steps[0]
	if !first.Resumed || len(first.Interrupted) != 1 || first.Interrupted[0] != "s" {
		t.Fatalf("resumed step: Resumed=%t Interrupted=%v, want the slow call interrupted", first.Resumed, first.Interrupted)
	}
	if fastRuns.Load() != 1 || slowRuns.Load() != 1 {
		t.Errorf("fast ran %d times, slow %d: a tool ran twice", fastRuns.Load(), slowRuns.Load())
	}
	want := []defs.Role{defs.RoleUser, defs.RoleAssistant, defs.RoleTool, defs.RoleTool, defs.RoleAssistant}
	var got []defs.Role
	for _, msg := range res.Transcript {
		got = append(got, msg.Role)
	}
	if len(got) != len(want) {
		t.Fatalf("transcript roles %v, want %v", got, want)
	}
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
	if err != nil {
		t.Fatal(err)
	}
	r := res.Steps[0].ToolResults[0]
	if !r.IsError || !strings.Contains(r.Content, `tool "boom" panicked: `) || !strings.Contains(r.Content, "nil map") {
		t.Fatalf("result %q, want a panic naming the tool and its value", r.Content)
	}
	// Issue 8 item 15: the model is not shown a Go source location; the
	// step record keeps it.
	if strings.Contains(r.Content, ".go:") {
		t.Errorf("result %q shows the model a source location", r.Content)
	}
	var pe *runtime.ToolPanicError
	if err := res.Steps[0].ToolErrors[r.CallID]; !errors.As(err, &pe) || !strings.HasPrefix(pe.Site, "faults_test.go:") {
		t.Errorf("ToolErrors[%s] = %v, want a *ToolPanicError at faults_test.go", r.CallID, err)
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
	if err != nil {
		t.Fatal(err)
	}
	if !res.Steps[0].Recovered {
		t.Error("step 0 not marked Recovered")
	}
	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	var got []string
	for _, msg := range reqs[1].Messages {
		got = append(got, msg.Content)
	}
	if want := []string{"short", "wrap up"}; !slices.Equal(got, want) {
		t.Errorf("resent messages %q, want %q", got, want)
	}
	if len(reqs[1].Tools) != 1 || reqs[1].Tools[0].Name != "safe" {
		t.Errorf("resent tools %+v, want only safe", reqs[1].Tools)
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
	if err != nil {
		t.Fatal(err)
	}
	if res.Usage.InputTokens != 3000 || res.Usage.OutputTokens != 30 {
		t.Errorf("usage %+v, want 3000 input and 30 output tokens (the sub-agent's call included)", res.Usage)
	}
	if want := 3030.0 / 1e6; res.Stats.Cost < want-1e-12 || res.Stats.Cost > want+1e-12 {
		t.Errorf("cost %v, want %v", res.Stats.Cost, want)
	}
	if res.Stats.Steps != 2 {
		t.Errorf("steps %d, want the parent's 2", res.Stats.Steps)
	}
}

func TestPanickingStopWhenIsAnError(t *testing.T) {
	cfg := runtime.Config{StopWhen: func(last *runtime.Step) bool {
		var s []int
		return s[3] == 0 // index out of range
	}}
	_, err := runtime.Run(context.Background(), snapshots.Script(snapshots.CallTool("echo", map[string]string{"text": "x"}), snapshots.Text("ok")), echoPrompt, cfg)
	var pe *runtime.PanicError
	if !errors.As(err, &pe) || !strings.Contains(pe.Site, "faults_test.go:") || pe.Step != 0 {
		t.Fatalf("err = %v, want a *PanicError at step 0 naming faults_test.go", err)
	}
}
