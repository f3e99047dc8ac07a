package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
	"github.com/reprompt/reprompt/state"
)

// remote is a ToolExecutor that runs every call with RunTool, as another
// process would, and reports the results in reverse call order.
type remote struct {
	fn    prompt.Func
	model llm.Model
	runs  int
}

func (x *remote) ExecuteTools(ctx context.Context, c *runtime.ToolCalls) error {
	st, err := c.State()
	if err != nil {
		return err
	}
	pending := c.Pending()
	slices.Reverse(pending)
	for _, i := range pending {
		out, err := runtime.RunTool(ctx, x.model, x.fn, runtime.Config{}, runtime.ToolRun{
			Input: c.Input(), Agent: c.Agent(), Step: c.Step(), State: st, Offered: c.Offered(), Call: c.Call(i)})
		if err != nil {
			return err
		}
		x.runs++
		if err := c.Finish(i, out.Content, out.IsError, out.Changes, out.Err); err != nil {
			return err
		}
	}
	return nil
}

type keyArgs struct {
	Key string `json:"key"`
	N   int    `json:"n"`
}

// tally's tool sets a key of its own per call, and reads state the prompt
// function captured.
func tally(p *prompt.Prompt) error {
	total, setTotal := prompt.State(p, "total", 0)
	p.Def("total", fmt.Sprint(total))
	setters := map[string]state.Setter[int]{}
	for _, k := range []string{"a", "b", "c"} {
		_, setters[k] = prompt.State(p, "k_"+k, 0)
	}
	prompt.DefTool(p, "put", "Put n under key.", func(ctx context.Context, a keyArgs) (string, error) {
		if a.N < 0 {
			return "", fmt.Errorf("negative n %d", a.N)
		}
		setters[a.Key].Set(ctx, a.N)
		setTotal.Set(ctx, total+a.N) // one call per step changes total
		return fmt.Sprintf("%s=%d (total was %d)", a.Key, a.N, total), nil
	})
	p.User("Put things.")
	return nil
}

func tallyModel() llm.Model {
	return snapshots.Script(
		snapshots.CallTools(
			snapshots.Call{Name: "put", Args: keyArgs{Key: "a", N: 1}},
		),
		snapshots.CallTools(
			snapshots.Call{Name: "put", Args: keyArgs{Key: "b", N: 2}},
			snapshots.Call{Name: "nope", Args: keyArgs{}},
			snapshots.Call{Name: "put", Args: keyArgs{Key: "c", N: -1}},
		),
		snapshots.Text("Done."),
	)
}

// A run whose tool calls a ToolExecutor runs with RunTool, in another
// order, ends with the transcript and state of a run without one.
func TestToolExecutorMatchesTheRuntime(t *testing.T) {
	ctx := context.Background()
	want, err := runtime.Run(ctx, tallyModel(), tally, runtime.Config{})
	require.NoError(t, err)

	x := &remote{fn: tally}
	got, err := runtime.Run(ctx, tallyModel(), tally, runtime.Config{ToolExecutor: x})
	require.NoError(t, err)
	require.Equal(t, 4, x.runs)

	assert.Empty(t, cmp.Diff(want.Transcript, got.Transcript), "transcript mismatch (-want +got)")
	for _, k := range []string{"total", "k_a", "k_b"} {
		w, err := runtime.StateOf[int](want, k)
		require.NoError(t, err)
		g, err := runtime.StateOf[int](got, k)
		require.NoError(t, err, k)
		require.Equal(t, w, g, k)
	}
	require.Len(t, got.Steps[1].ToolErrors, 1, "the Go error of the failed call")
}

// nothing leaves every call without a result.
type nothing struct{}

func (nothing) ExecuteTools(context.Context, *runtime.ToolCalls) error { return nil }

func TestToolExecutorWithoutResultFailsTheStep(t *testing.T) {
	_, err := runtime.Run(context.Background(), tallyModel(), tally, runtime.Config{ToolExecutor: nothing{}})
	var se *runtime.StepError
	require.ErrorAs(t, err, &se)
	require.Equal(t, runtime.OpTools, se.Op)
	require.ErrorContains(t, err, "without a result")
}

func TestToolCallsFinishRefusesBadInput(t *testing.T) {
	var errs []error
	x := executorFunc(func(ctx context.Context, c *runtime.ToolCalls) error {
		errs = append(errs, c.Finish(7, "", false, nil, nil))
		errs = append(errs, c.Finish(0, "x", false, map[string]json.RawMessage{"k": json.RawMessage("{")}, nil))
		c.Run(0)
		errs = append(errs, c.Finish(0, "again", false, nil, nil))
		return nil
	})
	_, err := runtime.Run(context.Background(), snapshots.Script(snapshots.CallTool("put", keyArgs{Key: "a", N: 1}), snapshots.Text("ok")), tally, runtime.Config{ToolExecutor: x})
	require.NoError(t, err)
	require.Len(t, errs, 3)
	require.ErrorContains(t, errs[0], "no call 7")
	require.ErrorContains(t, errs[1], `state "k"`)
	require.ErrorContains(t, errs[2], "already has a result")
}

type executorFunc func(context.Context, *runtime.ToolCalls) error

func (f executorFunc) ExecuteTools(ctx context.Context, c *runtime.ToolCalls) error { return f(ctx, c) }

// Config.Now is the clock of the run's elapsed time.
func TestConfigNow(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	agent := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "wait", "Wait a minute.", func(ctx context.Context, a struct{}) (string, error) {
			now = now.Add(time.Minute)
			return "waited", nil
		})
		return nil
	}
	model := snapshots.Script(snapshots.CallTool("wait", struct{}{}), snapshots.CallTool("wait", struct{}{}), snapshots.Text("done"))
	res, err := runtime.Run(context.Background(), model, agent, runtime.Config{Now: clock})
	require.NoError(t, err)
	require.Equal(t, 2*time.Minute, res.Stats.Elapsed)
}
