package runtime_test

import (
	"context"
	"errors"
	"testing"

	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/snapshots"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStepErrorOps checks that every way a step fails outside the prompt
// function and the effects is a *StepError whose Op is one of the exported
// constants and whose Step is the step that failed.
func TestStepErrorOps(t *testing.T) {
	ctx := context.Background()
	down := &llm.ModelError{StatusCode: 503, Message: "down"}
	tool := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "a", "a", func(ctx context.Context, _ struct{}) (string, error) { return "ok", nil })
		p.User("go")
		return nil
	}
	cases := []struct {
		name   string
		reason string
		model  llm.Model
		cfg    func() runtime.Config
		op     string
		step   int
		cause  error
	}{
		{
			name:   "model",
			reason: "the second model call fails: the step that sent it failed in the model",
			model:  snapshots.Script(snapshots.CallTools(snapshots.Call{ID: "c1", Name: "a"}), snapshots.Fail(down)),
			cfg:    func() runtime.Config { return runtime.Config{} },
			op:     runtime.OpModel, step: 1, cause: down,
		},
		{
			name:   "checkpoint after a tool result",
			reason: "the save of step 1's tool result fails: runCalls, which does not know the step, is reported with it",
			model: snapshots.Script(snapshots.CallTools(snapshots.Call{ID: "c1", Name: "a"}),
				snapshots.CallTools(snapshots.Call{ID: "c2", Name: "a"}), snapshots.Text("done")),
			cfg: func() runtime.Config {
				st := &failingStore{Store: session.NewMemory(), fail: func(cp *session.Checkpoint) bool {
					return cp.Pending != nil && cp.Step == 1 && len(cp.Pending.Results) == 1
				}}
				return runtime.Config{Store: st, SessionID: "s"}
			},
			op: runtime.OpCheckpoint, step: 1, cause: errCrash,
		},
		{
			name:   "checkpoint at the end of a step",
			reason: "the save after step 0 fails",
			model:  snapshots.Script(snapshots.CallTools(snapshots.Call{ID: "c1", Name: "a"}), snapshots.Text("done")),
			cfg: func() runtime.Config {
				st := &failingStore{Store: session.NewMemory(), fail: func(cp *session.Checkpoint) bool {
					return cp.Pending == nil && cp.Step == 1
				}}
				return runtime.Config{Store: st, SessionID: "s"}
			},
			op: runtime.OpCheckpoint, step: 0, cause: errCrash,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := runtime.Run(ctx, c.model, tool, c.cfg())
			var se *runtime.StepError
			require.ErrorAs(t, err, &se, c.reason)
			assert.Equal(t, c.op, se.Op, c.reason)
			assert.Equal(t, c.step, se.Step, c.reason)
			assert.ErrorIs(t, err, c.cause, c.reason)
		})
	}
}

type panicModel struct{ v any }

func (m panicModel) Generate(context.Context, *llm.Request) (*llm.Reply, error) { panic(m.v) }

// TestPanicErrorUnwraps checks that a panic with an error value is seen
// through by errors.Is and errors.As, for a model's panic (PanicError) and
// a tool's (ToolPanicError), and that other values unwrap to nothing.
func TestPanicErrorUnwraps(t *testing.T) {
	ctx := context.Background()
	sentinel := errors.New("broken invariant")
	fn := func(p *prompt.Prompt) error { p.User("go"); return nil }

	_, err := runtime.Run(ctx, panicModel{sentinel}, fn, runtime.Config{})
	var pe *runtime.PanicError
	require.ErrorAs(t, err, &pe)
	assert.ErrorIs(t, err, sentinel)

	_, err = runtime.Run(ctx, panicModel{"a string"}, fn, runtime.Config{})
	require.ErrorAs(t, err, &pe)
	assert.NoError(t, pe.Unwrap(), "a panic value that is not an error unwraps to nil")

	tool := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "boom", "boom", func(ctx context.Context, _ struct{}) (string, error) { panic(sentinel) })
		p.User("go")
		return nil
	}
	r := runtime.New(snapshots.Script(snapshots.CallTools(snapshots.Call{ID: "c1", Name: "boom"}), snapshots.Text("done")), tool, runtime.Config{})
	defer r.Close()
	s, err := r.Next(ctx)
	require.NoError(t, err)
	var tpe *runtime.ToolPanicError
	require.ErrorAs(t, s.ToolErrors["c1"], &tpe)
	assert.ErrorIs(t, s.ToolErrors["c1"], sentinel)
}
