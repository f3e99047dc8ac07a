package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
	"github.com/reprompt/reprompt/state"
)

// Helpers shared by the runtime tests.

// nextLine returns "file.go:N+1" for the caller's line N: the site of the
// statement on the line below the call.
func nextLine() string {
	_, file, line, _ := goruntime.Caller(1)
	return fmt.Sprintf("%s:%d", filepath.Base(file), line+1)
}

// transcriptOf renders messages as one line each, so that whole requests can
// be compared with cmp.Diff and read in a failure.
func transcriptOf(msgs []defs.Message) []string {
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		var b strings.Builder
		b.WriteString(string(m.Role))
		if m.Role == defs.RoleTool {
			fmt.Fprintf(&b, "[%s %s]", m.ToolCallID, m.Name)
			if m.IsError {
				b.WriteString("!")
			}
		}
		b.WriteString(": ")
		b.WriteString(m.Content)
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, " {%s %s %s}", c.ID, c.Name, c.Arguments)
		}
		out = append(out, b.String())
	}
	return out
}

// toolNames returns the names of the tools offered in req.
func toolNames(req *llm.Request) []string {
	var out []string
	for _, t := range req.Tools {
		out = append(out, t.Name)
	}
	return out
}

// systems returns the system prompt of every request.
func systems(reqs []*llm.Request) []string {
	out := make([]string, len(reqs))
	for i, r := range reqs {
		out[i] = r.System
	}
	return out
}

// run runs fn against m and fails the test on error.
func run(t *testing.T, m *snapshots.Model, fn prompt.Func, cfg runtime.Config) *runtime.Result {
	t.Helper()
	res, err := runtime.Run(context.Background(), m, fn, cfg)
	require.NoError(t, err, "Run")
	assert.Equal(t, 0, m.Remaining(), "scripted replies left unused")
	return res
}

type noArgs struct{}

type amountArgs struct {
	N int `json:"n" jsonschema:"how much to add"`
}

// counter is a prompt whose system prompt shows a count that its add tool
// increases.
func counter(executions *atomic.Int32) prompt.Func {
	return func(p *prompt.Prompt) error {
		if executions != nil {
			executions.Add(1)
		}
		count, setCount := prompt.State(p, "count", 0)
		p.DefSystem("role", "You count.")
		p.Def("count", strconv.Itoa(count))
		prompt.DefTool(p, "add", "Add n to the count.", func(ctx context.Context, a amountArgs) (string, error) {
			setCount.Update(ctx, func(c int) int { return c + a.N })
			return "ok", nil
		})
		p.User("Count.")
		return nil
	}
}

// missingConfig returns a nil map, so that writing to it panics in the
// Go runtime, as a real bug would.
func missingConfig() map[string]string { return nil }

// Section 1: the step loop.

func TestLoopReExecutesPromptWithCurrentState(t *testing.T) {
	var executions atomic.Int32
	m := snapshots.Script(
		snapshots.CallTool("add", amountArgs{N: 2}),
		snapshots.CallTool("add", amountArgs{N: 3}),
		snapshots.Text("five"),
	)
	res := run(t, m, counter(&executions), runtime.Config{})

	assert.Equal(t, int32(3), executions.Load(), "prompt executions, want one per step")
	reqs := m.Requests()
	wantSystems := []string{
		"<role>\nYou count.\n</role>\n\n<variables>\n<count>0</count>\n</variables>",
		"<role>\nYou count.\n</role>\n\n<variables>\n<count>2</count>\n</variables>",
		"<role>\nYou count.\n</role>\n\n<variables>\n<count>5</count>\n</variables>",
	}
	assert.Empty(t, cmp.Diff(wantSystems, systems(reqs)), "system prompts mismatch (-want +got)")
	wantLast := []string{
		"user: Count.",
		`assistant:  {call_1 add {"n":2}}`,
		"tool[call_1 add]: ok",
		`assistant:  {call_2 add {"n":3}}`,
		"tool[call_2 add]: ok",
	}
	assert.Empty(t, cmp.Diff(wantLast, transcriptOf(reqs[2].Messages)), "last request messages mismatch (-want +got)")
	assert.Equal(t, "five", res.Text, "result: Text")
	if assert.Len(t, res.Steps, 3, "result: Steps") {
		assert.True(t, res.Steps[2].Done, "result: Steps[2].Done")
	}
	wantStates := []any{2, 5, 5}
	for i, s := range res.Steps {
		assert.Equal(t, i, s.Number, "step %d record: Number", i)
		assert.Equal(t, wantStates[i], s.State["count"], "step %d record: state count", i)
	}
	assert.Empty(t, cmp.Diff(append(transcriptOf(reqs[2].Messages), "assistant: five"), transcriptOf(res.Transcript)), "final transcript mismatch (-want +got)")
	assert.NotZero(t, res.Usage.InputTokens, "usage not summed: InputTokens")
	assert.NotZero(t, res.Usage.OutputTokens, "usage not summed: OutputTokens")
}

func TestLoopReconciliationRemovesToolDeclaredOnlyAtStep0(t *testing.T) {
	var setupRuns atomic.Int32
	fn := func(p *prompt.Prompt) error {
		if p.Step() == 0 {
			prompt.DefTool(p, "setup", "Only at the start.", func(context.Context, noArgs) (string, error) {
				setupRuns.Add(1)
				return "set up", nil
			})
			p.DefSystem("onboarding", "Set up first.")
		}
		prompt.DefTool(p, "work", "Work.", func(context.Context, noArgs) (string, error) { return "worked", nil })
		p.User("go")
		return nil
	}
	m := snapshots.Script(
		snapshots.CallTool("setup", nil),
		snapshots.CallTool("setup", nil), // no longer declared
		snapshots.Text("done"),
	)
	res := run(t, m, fn, runtime.Config{})
	reqs := m.Requests()
	var got [][]string
	for _, r := range reqs {
		got = append(got, toolNames(r))
	}
	assert.Empty(t, cmp.Diff([][]string{{"setup", "work"}, {"work"}, {"work"}}, got), "tools per request mismatch (-want +got)")
	assert.Empty(t, cmp.Diff([]string{"<onboarding>\nSet up first.\n</onboarding>", "", ""}, systems(reqs)), "system prompts mismatch (-want +got)")
	assert.Equal(t, int32(1), setupRuns.Load(), "setup runs")
	// Calling a removed tool: an unknown-tool error listing the tools.
	r := res.Steps[1].ToolResults[0]
	assert.True(t, r.IsError, "result of calling a removed tool: IsError")
	assert.Contains(t, r.Content, `unknown tool "setup"`, "result of calling a removed tool")
	assert.Contains(t, r.Content, "work", "result of calling a removed tool lists the tools")
}

func TestStepLimit(t *testing.T) {
	loop := func(n int) []snapshots.Reply {
		out := make([]snapshots.Reply, n)
		for i := range out {
			out[i] = snapshots.CallTool("add", amountArgs{N: 1})
		}
		return out
	}
	tests := []struct {
		name      string
		cfg       runtime.Config
		replies   []snapshots.Reply
		wantSteps int
		wantLimit bool
		reason    string // why, where the case is not obvious
	}{
		{"limit reached", runtime.Config{MaxSteps: 3}, loop(5), 3, true, ""},
		{"StopWhen false does not lift the limit", runtime.Config{MaxSteps: 3, StopWhen: func(*runtime.Step) bool { return false }}, loop(5), 3, true,
			"no stop condition overrides the limit"},
		{"StopTools not called do not lift the limit", runtime.Config{MaxSteps: 3, StopTools: []string{"finish"}}, loop(5), 3, true,
			"no stop condition overrides the limit"},
		{"StopWhen ends the run before the limit", runtime.Config{MaxSteps: 5, StopWhen: func(s *runtime.Step) bool { return s.Number == 1 }}, loop(5), 2, false, ""},
		{"StopWhen at the limit step ends normally", runtime.Config{MaxSteps: 2, StopWhen: func(s *runtime.Step) bool { return s.Number == 1 }}, loop(5), 2, false,
			"the limit overrides no stop condition: StopWhen ending the run on the last step is a normal end"},
		{"StopTools ends the run", runtime.Config{MaxSteps: 5, StopTools: []string{"add"}}, loop(5), 1, false, ""},
		{"text before the limit", runtime.Config{MaxSteps: 3}, append(loop(2), snapshots.Text("ok")), 3, false,
			"a reply without tool calls on the last step ends the run: the limit is on calling tools past it"},
		{"default limit", runtime.Config{}, loop(runtime.DefaultMaxSteps + 1), runtime.DefaultMaxSteps, true, "MaxSteps 0 means DefaultMaxSteps"},
		{"no limit", runtime.Config{MaxSteps: -1}, append(loop(runtime.DefaultMaxSteps+5), snapshots.Text("ok")), runtime.DefaultMaxSteps + 6, false,
			"a negative MaxSteps removes the limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.reason != "" {
				t.Cleanup(func() {
					if t.Failed() {
						t.Logf("why: %s", tt.reason)
					}
				})
			}
			m := snapshots.Script(tt.replies...)
			res, err := runtime.Run(context.Background(), m, counter(nil), tt.cfg)
			require.Equal(t, tt.wantLimit, errors.Is(err, runtime.ErrMaxSteps), "Run error = %v: errors.Is(err, ErrMaxSteps)", err)
			if !tt.wantLimit {
				require.NoError(t, err, "Run")
			}
			assert.Len(t, m.Requests(), tt.wantSteps, "requests")
			assert.Len(t, res.Steps, tt.wantSteps, "step records")
			// ErrMaxSteps is wrapped by an untyped error: the limit is only
			// in the text.
			if tt.wantLimit {
				assert.Contains(t, err.Error(), strconv.Itoa(tt.wantSteps)+" steps", "the error does not say the limit")
			}
			assert.True(t, res.Steps[len(res.Steps)-1].Done, "last step record is not Done")
		})
	}
}

func TestStopToolThatFailsDoesNotStop(t *testing.T) {
	fn := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "finish", "End.", func(_ context.Context, a amountArgs) (string, error) {
			if a.N == 0 {
				return "", errors.New("not yet")
			}
			return "finished", nil
		})
		p.User("go")
		return nil
	}
	m := snapshots.Script(snapshots.CallTool("finish", amountArgs{N: 0}), snapshots.CallTool("finish", amountArgs{N: 1}))
	res := run(t, m, fn, runtime.Config{StopTools: []string{"finish"}})
	if assert.Len(t, res.Steps, 2, "steps") {
		assert.Equal(t, "finished", res.Steps[1].ToolResults[0].Content, "step 1's result")
		assert.True(t, res.Steps[1].Done, "step 1 is not Done")
	}
}

// stepSummary is what the grains are compared on.
type stepSummary struct {
	Number   int
	System   string
	Messages []string
	Tools    []string
	Reply    []string
	Results  []defs.ToolResult
	State    map[string]any
	Effects  []string
	Done     bool
}

func summarize(s *runtime.Step) stepSummary {
	out := stepSummary{Number: s.Number, Results: s.ToolResults, State: s.State, Done: s.Done}
	if s.Request() != nil {
		out.System, out.Messages, out.Tools = s.Request().System, transcriptOf(s.Request().Messages), toolNames(s.Request())
	}
	if s.Reply != nil {
		out.Reply = transcriptOf([]defs.Message{s.Reply.Message})
	}
	for _, e := range s.Effects {
		out.Effects = append(out.Effects, e.ID+" "+e.Reason.String())
	}
	return out
}

func grainScript() *snapshots.Model {
	return snapshots.Script(
		snapshots.CallTool("add", amountArgs{N: 1}),
		snapshots.CallTools(snapshots.Call{Name: "add", Args: amountArgs{N: 2}}, snapshots.Call{Name: "add", Args: amountArgs{N: 3}}),
		snapshots.Text("six"),
	)
}

func grainPrompt(p *prompt.Prompt) error {
	if err := counter(nil)(p); err != nil {
		return err
	}
	count, _ := prompt.State(p, "count", 0)
	p.Effect(effects.On(effects.Named("count", count)), func(context.Context, *effects.Step) error { return nil })
	return nil
}

func TestThreeGrainsAgree(t *testing.T) {
	ctx := context.Background()

	res, err := runtime.Run(ctx, grainScript(), grainPrompt, runtime.Config{})
	require.NoError(t, err)
	var viaRun []stepSummary
	for _, s := range res.Steps {
		viaRun = append(viaRun, summarize(s))
	}

	var viaNext []stepSummary
	r := runtime.New(grainScript(), grainPrompt, runtime.Config{})
	for {
		require.Equal(t, len(viaNext), r.StepNumber(), "StepNumber before step %d", len(viaNext))
		s, err := r.Next(ctx)
		if errors.Is(err, runtime.ErrDone) {
			break
		}
		require.NoError(t, err)
		viaNext = append(viaNext, summarize(s))
	}
	_, err = r.Next(ctx)
	assert.ErrorIs(t, err, runtime.ErrDone, "Next after the end")

	var viaAll []stepSummary
	ra := runtime.New(grainScript(), grainPrompt, runtime.Config{})
	for s, err := range ra.All(ctx) {
		require.NoError(t, err)
		viaAll = append(viaAll, summarize(s))
	}
	_, err = ra.Next(ctx)
	assert.ErrorIs(t, err, runtime.ErrDone, "Next after All")

	require.Len(t, viaRun, 3, "steps Run made")
	assert.Empty(t, cmp.Diff(viaRun, viaNext), "Run and Next disagree (-run +next)")
	assert.Empty(t, cmp.Diff(viaRun, viaAll), "Run and All disagree (-run +all)")
	assert.Empty(t, cmp.Diff(transcriptOf(res.Transcript), transcriptOf(r.Transcript())), "transcripts disagree (-run +next)")
	n, _ := prompt.GetState[int](context.Background(), r.Prompt(), "count")
	assert.Equal(t, 6, n, "count after the run")
}

func TestAllStopsWhenTheLoopBreaks(t *testing.T) {
	m := grainScript()
	r := runtime.New(m, grainPrompt, runtime.Config{})
	for range r.All(context.Background()) {
		break
	}
	require.Len(t, m.Requests(), 1, "requests after breaking at the first step")
	// The run can be continued.
	s, err := r.Next(context.Background())
	if assert.NoError(t, err, "Next after break") {
		assert.Equal(t, 1, s.Number, "Next after break: step Number")
	}
}

func TestNextAfterErrorReturnsSameError(t *testing.T) {
	boom := errors.New("provider down")
	m := snapshots.Script(snapshots.Fail(boom))
	r := runtime.New(m, counter(nil), runtime.Config{})
	_, err := r.Next(context.Background())
	var se *runtime.StepError
	require.ErrorAs(t, err, &se, "Next")
	require.Equal(t, "model", se.Op, "StepError.Op")
	require.Equal(t, 0, se.Step, "StepError.Step")
	require.ErrorIs(t, err, boom, "Next, want the model's error wrapped")
	_, err2 := r.Next(context.Background())
	assert.True(t, err2 == err, "second Next = %v, want the same error", err2)
	assert.Len(t, m.Requests(), 1, "requests")
}

func TestCanceledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m := snapshots.Script(snapshots.Text("never"))
	_, err := runtime.Run(ctx, m, counter(nil), runtime.Config{})
	assert.ErrorIs(t, err, context.Canceled, "Run")
	assert.Empty(t, m.Requests(), "requests")
}

// Section 2: state.

func TestStateVisibility(t *testing.T) {
	var toolSaw []string
	fn := func(p *prompt.Prompt) error {
		count, setCount := prompt.State(p, "count", 0)
		prompt.DefTool(p, "bump", "Bump.", func(ctx context.Context, _ noArgs) (string, error) {
			setCount.Set(ctx, count+10)
			setCount.Update(ctx, func(n int) int { return n + 1 })
			live, err := prompt.GetState[int](ctx, p, "count")
			if err != nil {
				return "", err
			}
			out := fmt.Sprintf("snapshot=%d live=%d", count, live)
			toolSaw = append(toolSaw, out)
			return out, nil
		})
		p.Def("seen", strconv.Itoa(count))
		p.User("go")
		return nil
	}
	m := snapshots.Script(snapshots.CallTool("bump", nil), snapshots.CallTool("bump", nil), snapshots.Text("ok"))
	res := run(t, m, fn, runtime.Config{})
	want := []string{"snapshot=0 live=11", "snapshot=11 live=22"}
	assert.Empty(t, cmp.Diff(want, toolSaw), "tool saw mismatch (-want +got)")
	var seen []string
	for _, r := range m.Requests() {
		seen = append(seen, r.System)
	}
	wantSys := []string{
		"<variables>\n<seen>0</seen>\n</variables>",
		"<variables>\n<seen>11</seen>\n</variables>",
		"<variables>\n<seen>22</seen>\n</variables>",
	}
	assert.Empty(t, cmp.Diff(wantSys, seen), "execution-time values mismatch (-want +got)")
	// Setting state never triggers a step: one step per scripted reply.
	assert.Len(t, res.Steps, 3, "steps")
}

func TestEffectClosureSeesSnapshotOfItsExecution(t *testing.T) {
	var got []string
	fn := func(p *prompt.Prompt) error {
		n, set := prompt.State(p, "n", 0)
		p.Effect(effects.Always, func(ctx context.Context, _ *effects.Step) error {
			set.Set(ctx, n+1)
			live, _ := prompt.GetState[int](ctx, p, "n")
			got = append(got, fmt.Sprintf("%d/%d", n, live))
			return nil
		})
		prompt.DefTool(p, "noop", "d", func(context.Context, noArgs) (string, error) { return "", nil })
		p.User("go")
		return nil
	}
	run(t, snapshots.Script(snapshots.CallTool("noop", nil), snapshots.Text("ok")), fn, runtime.Config{})
	assert.Empty(t, cmp.Diff([]string{"0/1", "1/2"}, got), "effect saw mismatch (-want +got)")
}

func TestStateKeyOfWrongTypeFailsRun(t *testing.T) {
	var site string
	fn := func(p *prompt.Prompt) error {
		prompt.State(p, "mode", "fast")
		if p.Step() == 1 {
			site = nextLine()
			prompt.State(p, "mode", 1)
		}
		prompt.DefTool(p, "noop", "d", func(context.Context, noArgs) (string, error) { return "", nil })
		p.User("go")
		return nil
	}
	m := snapshots.Script(snapshots.CallTool("noop", nil), snapshots.Text("unreached"))
	_, err := runtime.Run(context.Background(), m, fn, runtime.Config{})
	var pe *prompt.Error
	var te *state.TypeError
	require.ErrorAs(t, err, &pe, "Run")
	require.ErrorAs(t, err, &te, "Run, want the *state.TypeError wrapped")
	assert.Equal(t, 1, pe.Step, "prompt.Error.Step")
	assert.Equal(t, site, pe.Site, "prompt.Error.Site")
	assert.Empty(t, cmp.Diff(&state.TypeError{Key: "mode", Have: "string", Want: "int"}, te), "TypeError mismatch (-want +got)")
	// The message is the contract here: it names the user's call site.
	assert.Contains(t, err.Error(), site, "the error does not name the site")
	assert.Len(t, m.Requests(), 1, "requests")
}

func TestPromptPanicFailsRunWithSite(t *testing.T) {
	var site string
	var cleaned atomic.Bool
	fn := func(p *prompt.Prompt) error {
		p.Effect(effects.Once, func(_ context.Context, s *effects.Step) error {
			s.Cleanup(func() { cleaned.Store(true) })
			return nil
		})
		prompt.DefTool(p, "noop", "d", func(context.Context, noArgs) (string, error) { return "", nil })
		p.User("go")
		if p.Step() == 1 {
			cfg := missingConfig()
			site = nextLine()
			cfg["x"] = "boom" // a runtime panic: nil map write
		}
		return nil
	}
	m := snapshots.Script(snapshots.CallTool("noop", nil), snapshots.Text("unreached"))
	res, err := runtime.Run(context.Background(), m, fn, runtime.Config{})
	var pe *prompt.Error
	require.ErrorAs(t, err, &pe, "Run")
	assert.True(t, pe.Panicked, "prompt.Error.Panicked")
	assert.Equal(t, 1, pe.Step, "prompt.Error.Step")
	assert.Equal(t, site, pe.Site, "prompt.Error.Site")
	var re goruntime.Error // the panic's value: assignment to entry in nil map
	assert.ErrorAs(t, err, &re, "Run, want the panic's runtime.Error wrapped")
	// The message is the contract here: it names the user's call site.
	assert.Contains(t, err.Error(), site, "the error does not name the site")
	// The completed step and the failed one without a request.
	if assert.Len(t, res.Steps, 2, "steps") {
		assert.Nil(t, res.Steps[1].Request(), "the failed step's Request")
	}
	assert.True(t, cleaned.Load(), "effect cleanup did not run when the run failed")
}

// Section 3: effects across real steps.

func TestEffectCadencesAcrossSteps(t *testing.T) {
	runsAt := map[string][]int{}
	fn := func(p *prompt.Prompt) error {
		count, _ := prompt.State(p, "count", 0)
		record := func(name string) effects.Func {
			return func(_ context.Context, s *effects.Step) error {
				runsAt[name] = append(runsAt[name], s.Number)
				return nil
			}
		}
		p.Effect(effects.Always, record("always"))
		p.Effect(effects.Once, record("once"))
		p.Effect(effects.On(count), record("on count"))
		p.Effect(effects.On("constant", []string{"a"}, map[string]int{"k": 1}), record("on constants"))
		return counter(nil)(p)
	}
	m := snapshots.Script(
		snapshots.CallTool("add", amountArgs{N: 0}), // count stays 0
		snapshots.CallTool("add", amountArgs{N: 1}), // 1
		snapshots.CallTool("add", amountArgs{N: 0}), // 1
		snapshots.CallTool("add", amountArgs{N: 2}), // 3
		snapshots.Text("done"),
	)
	res := run(t, m, fn, runtime.Config{})
	want := map[string][]int{
		"always":       {0, 1, 2, 3, 4},
		"once":         {0},
		"on count":     {0, 2, 4},
		"on constants": {0},
	}
	assert.Empty(t, cmp.Diff(want, runsAt), "effect runs mismatch (-want +got)")
	var reasons []string
	for _, s := range res.Steps {
		for _, e := range s.Effects {
			if e.ID == "#2" {
				reasons = append(reasons, fmt.Sprintf("%d %s", s.Number, e.Reason))
			}
		}
	}
	assert.Empty(t, cmp.Diff([]string{"0 first run", "2 deps[0]: 0 → 1", "4 deps[0]: 1 → 3"}, reasons), "step records' reasons mismatch (-want +got)")
}

// TestDependencyMemorySurvivesReExecution is the seed bug: the prompt
// function is executed again before every step, and an effect whose
// dependencies did not change must not run again.
func TestDependencyMemorySurvivesReExecution(t *testing.T) {
	var runs atomic.Int32
	fn := func(p *prompt.Prompt) error {
		p.DefSystem("role", "r")
		// A fresh slice and closure at every execution, with the same values.
		deps := []string{"fixed", "list"}
		p.Effect(effects.On(deps, struct{ a, b int }{1, 2}), func(_ context.Context, s *effects.Step) error {
			runs.Add(1)
			s.AppendMessages(defs.UserMessage("effect ran"))
			return nil
		})
		prompt.DefTool(p, "noop", "d", func(context.Context, noArgs) (string, error) { return "", nil })
		p.User("go")
		return nil
	}
	m := snapshots.Script(
		snapshots.CallTool("noop", nil), snapshots.CallTool("noop", nil),
		snapshots.CallTool("noop", nil), snapshots.Text("done"),
	)
	run(t, m, fn, runtime.Config{})
	assert.Equal(t, int32(1), runs.Load(), "effect runs over 4 executions")
	var tails []string
	for _, r := range m.Requests() {
		tails = append(tails, r.Messages[len(r.Messages)-1].Content)
	}
	assert.Empty(t, cmp.Diff([]string{"effect ran", "", "", ""}, tails), "last message of each request (-want +got)")
}

func TestEffectErrorAbortsRun(t *testing.T) {
	quota := errors.New("quota exceeded")
	var site string
	fn := func(p *prompt.Prompt) error {
		p.Effect(effects.Always, func(context.Context, *effects.Step) error { return nil })
		site = nextLine()
		p.Effect(effects.Always, func(_ context.Context, s *effects.Step) error {
			if s.Number == 1 {
				return fmt.Errorf("checking budget: %w", quota)
			}
			return nil
		})
		return counter(nil)(p)
	}
	m := snapshots.Script(snapshots.CallTool("add", amountArgs{N: 1}), snapshots.Text("unreached"))
	res, err := runtime.Run(context.Background(), m, fn, runtime.Config{})
	var ee *effects.Error
	require.ErrorAs(t, err, &ee, "Run")
	require.ErrorIs(t, err, quota, "Run, want the effect's error wrapped")
	assert.Equal(t, "#1", ee.ID, "effects.Error.ID")
	assert.Equal(t, 1, ee.Step, "effects.Error.Step")
	assert.Equal(t, site, ee.Site, "effects.Error.Site")
	assert.Equal(t, effects.BeforeCall, ee.Phase, "effects.Error.Phase")
	// The message is the contract here: it names the user's call site.
	assert.Contains(t, err.Error(), site, "the error does not name the site")
	assert.Len(t, m.Requests(), 1, "model calls: the failing step must not be sent")
	if assert.Len(t, res.Steps, 2, "step records") {
		assert.Len(t, res.Steps[1].Effects, 2, "the failed step's record lists both effects")
	}
}

func TestEffectPanicAbortsRun(t *testing.T) {
	var site string
	fn := func(p *prompt.Prompt) error {
		p.Effect(effects.Once, func(_ context.Context, s *effects.Step) error {
			var last *defs.ToolResult
			site = nextLine()
			_ = last.Content // nil dereference
			return nil
		}, effects.Key("reader"))
		return counter(nil)(p)
	}
	m := snapshots.Script(snapshots.Text("unreached"))
	_, err := runtime.Run(context.Background(), m, fn, runtime.Config{})
	var ee *effects.Error
	require.ErrorAs(t, err, &ee, "Run")
	assert.Equal(t, "key:reader", ee.ID, "effects.Error.ID")
	assert.Equal(t, site, ee.PanicSite, "effects.Error.PanicSite")
	assert.Equal(t, 0, ee.Step, "effects.Error.Step")
	// The message is the contract here: it names the panic's site.
	assert.Contains(t, err.Error(), "panicked at "+site, "the error does not name the panic's site")
	assert.Empty(t, m.Requests(), "requests")
}

func TestEffectCleanups(t *testing.T) {
	var log []string
	fn := func(p *prompt.Prompt) error {
		count, _ := prompt.State(p, "count", 0)
		p.Effect(effects.On(count), func(_ context.Context, s *effects.Step) error {
			log = append(log, fmt.Sprintf("run %d", count))
			s.Cleanup(func() { log = append(log, fmt.Sprintf("cleanup %d", count)) })
			return nil
		})
		if p.Step() < 1 {
			p.Effect(effects.Once, func(_ context.Context, s *effects.Step) error {
				s.Cleanup(func() { log = append(log, "conditional gone") })
				return nil
			}, effects.Key("early"))
		}
		return counter(nil)(p)
	}
	m := snapshots.Script(
		snapshots.CallTool("add", amountArgs{N: 1}),
		snapshots.CallTool("add", amountArgs{N: 0}),
		snapshots.Text("done"),
	)
	run(t, m, fn, runtime.Config{})
	want := []string{"run 0", "conditional gone", "cleanup 0", "run 1", "cleanup 1"}
	assert.Empty(t, cmp.Diff(want, log), "log mismatch (-want +got)")
}

func TestEffectSeesStepContext(t *testing.T) {
	type ctxKey struct{}
	type seen struct {
		Number   int
		Messages []string
		Tools    []string
		Systems  []string
		Vars     []string
		HasAdd   bool
		LastTool *defs.ToolResult
		Ctx      any
	}
	var got []seen
	fn := func(p *prompt.Prompt) error {
		p.Effect(effects.Always, func(ctx context.Context, s *effects.Step) error {
			got = append(got, seen{
				Number: s.Number, Messages: transcriptOf(s.Messages()),
				Tools: s.Tools.Names(), Systems: s.Systems.Names(), Vars: s.Variables.Names(),
				HasAdd: s.Tools.Has("add"), LastTool: s.LastTool, Ctx: ctx.Value(ctxKey{}),
			})
			return nil
		})
		return counter(nil)(p)
	}
	m := snapshots.Script(snapshots.CallTool("add", amountArgs{N: 4}), snapshots.Text("done"))
	ctx := context.WithValue(context.Background(), ctxKey{}, "v")
	_, err := runtime.Run(ctx, m, fn, runtime.Config{})
	require.NoError(t, err)
	want := []seen{
		{0, []string{"user: Count."}, []string{"add"}, []string{"role"}, []string{"count"}, true, nil, "v"},
		{1, []string{"user: Count.", `assistant:  {call_1 add {"n":4}}`, "tool[call_1 add]: ok"},
			[]string{"add"}, []string{"role"}, []string{"count"}, true,
			&defs.ToolResult{CallID: "call_1", Name: "add", Arguments: []byte(`{"n":4}`), Content: "ok"}, "v"},
	}
	assert.Empty(t, cmp.Diff(want, got), "effect saw mismatch (-want +got)")
}

func TestAfterReplyEffects(t *testing.T) {
	var seen []string
	fn := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "fetch", "Fetch a page.", func(context.Context, noArgs) (string, error) {
			return strings.Repeat("x", 50), nil
		})
		p.User("go")
		p.Effect(effects.Always, func(_ context.Context, s *effects.Step) error {
			seen = append(seen, fmt.Sprintf("before %d reply=%v results=%v", s.Number, s.Reply != nil, s.Results != nil))
			return nil
		})
		// Trim each tool result as soon as it arrives: a commit, once.
		p.Effect(effects.Always, func(_ context.Context, s *effects.Step) error {
			seen = append(seen, fmt.Sprintf("after %d calls=%d results=%d phase=%s",
				s.Number, len(s.Reply.ToolCalls), len(s.Results), s.Phase))
			if len(s.Results) == 0 {
				return nil
			}
			tr := append([]defs.Message(nil), s.Transcript()...)
			last := &tr[len(tr)-1]
			if last.Role == defs.RoleTool && len(last.Content) > 10 {
				last.Content = last.Content[:10] + "…"
				s.CommitMessages(tr)
			}
			return nil
		}, effects.InPhase(effects.AfterReply))
		return nil
	}
	m := snapshots.Script(snapshots.CallTool("fetch", nil), snapshots.Text("done"))
	res := run(t, m, fn, runtime.Config{})
	want := []string{
		"before 0 reply=false results=false",
		"after 0 calls=1 results=1 phase=after-reply",
		"before 1 reply=false results=false",
		"after 1 calls=0 results=0 phase=after-reply",
	}
	assert.Empty(t, cmp.Diff(want, seen), "phases mismatch (-want +got)")
	// The step record keeps the full result; the next request sees it trimmed.
	assert.Len(t, res.Steps[0].ToolResults[0].Content, 50, "step record result, want the untrimmed bytes")
	assert.True(t, res.Steps[0].Committed, "step 0: Committed")
	assert.False(t, res.Steps[1].Committed, "step 1: Committed")
	wantMsgs := []string{"user: go", "assistant:  {call_1 fetch {}}", "tool[call_1 fetch]: xxxxxxxxxx…"}
	assert.Empty(t, cmp.Diff(wantMsgs, transcriptOf(m.Requests()[1].Messages)), "second request mismatch (-want +got)")
	var phases []string
	for _, e := range res.Steps[0].Effects {
		phases = append(phases, e.ID+" "+e.Phase.String())
	}
	assert.Empty(t, cmp.Diff([]string{"#0 before-call", "#1 after-reply"}, phases), "step record effects mismatch (-want +got)")
}

func TestAfterReplyCommitIsValidated(t *testing.T) {
	fn := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "noop", "d", func(context.Context, noArgs) (string, error) { return "", nil })
		p.User("go")
		p.Effect(effects.Always, func(_ context.Context, s *effects.Step) error {
			if len(s.Results) > 0 {
				s.CommitMessages(s.Transcript()[:2]) // drops the tool result: broken
			}
			return nil
		}, effects.InPhase(effects.AfterReply))
		return nil
	}
	m := snapshots.Script(snapshots.CallTool("noop", nil), snapshots.Text("unreached"))
	_, err := runtime.Run(context.Background(), m, fn, runtime.Config{})
	var se *runtime.StepError
	var re *llm.RequestError
	require.ErrorAs(t, err, &se, "Run")
	require.ErrorAs(t, err, &re, "Run, want the *llm.RequestError wrapped")
	require.Equal(t, "validate", se.Op, "StepError.Op")
	require.Equal(t, 1, re.Index, "RequestError.Index")
	assert.Len(t, m.Requests(), 1, "requests")
}

func TestHookOrderChangeFailsRun(t *testing.T) {
	var condSite, mainSite string
	fn := func(p *prompt.Prompt) error {
		if p.Step() == 0 {
			condSite = nextLine()
			p.Effect(effects.Once, func(context.Context, *effects.Step) error { return nil })
		}
		mainSite = nextLine()
		p.Effect(effects.On(1), func(context.Context, *effects.Step) error { return nil })
		return counter(nil)(p)
	}
	m := snapshots.Script(snapshots.CallTool("add", amountArgs{N: 1}), snapshots.Text("unreached"))
	_, err := runtime.Run(context.Background(), m, fn, runtime.Config{})
	var he *effects.HookOrderError
	require.ErrorAs(t, err, &he, "Run")
	assert.Equal(t, condSite, he.Was, "HookOrderError.Was")
	assert.Equal(t, mainSite, he.Now, "HookOrderError.Now")
	var pe *prompt.Error
	if assert.ErrorAs(t, err, &pe, "Run") {
		assert.Equal(t, 1, pe.Step, "prompt.Error.Step")
		assert.Equal(t, mainSite, pe.Site, "prompt.Error.Site")
	}
}

func TestSettingStateDoesNotTriggerAStep(t *testing.T) {
	m := snapshots.Script(snapshots.CallTool("add", amountArgs{N: 1}), snapshots.Text("done"))
	r := runtime.New(m, counter(nil), runtime.Config{})
	_, err := r.Next(context.Background())
	require.NoError(t, err)
	// Between steps, state set from outside is seen by the next execution
	// only; nothing runs on its own.
	state.Set(context.Background(), r.Prompt().Store(), "count", 40)
	require.Len(t, m.Requests(), 1, "setting state ran something: requests")
	require.Equal(t, 1, r.StepNumber(), "setting state ran something: next step")
	_, err = r.Next(context.Background())
	require.NoError(t, err)
	assert.Contains(t, m.Requests()[1].System, "<count>40</count>", "next execution did not see the new value")
}
