package runtime_test

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/snapshots"
)

// TestStepRecords checks the record of each step the runtime leaves in the
// checkpoint that ends it: effects and why, disables, tokens, tool calls
// with their durations and errors, and a compaction.
func TestStepRecords(t *testing.T) {
	fn := func(p *prompt.Prompt) error {
		n, setN := prompt.State(p, "n", 0)
		p.DefSystem("role", "You add.")
		prompt.DefTool(p, "add", "add one", func(ctx context.Context, _ struct{}) (int, error) {
			setN.Set(ctx, n+1)
			return n + 1, nil
		})
		fail := prompt.DefTool(p, "fail", "fails", func(ctx context.Context, _ struct{}) (string, error) {
			return "", context.DeadlineExceeded
		})
		p.Effect(effects.On(n), func(ctx context.Context, s *effects.Step) error {
			if n == 0 {
				fail.Disable()
			}
			if n == 2 { // compact: keep the first message and the last turn
				msgs := s.Messages()
				s.CommitMessages(append([]defs.Message{msgs[0]}, msgs[len(msgs)-3:]...))
			}
			return nil
		})
		p.User("add")
		return nil
	}
	model := snapshots.Script(
		snapshots.CallTool("add", nil),
		snapshots.CallTools(snapshots.Call{Name: "add"}, snapshots.Call{Name: "fail"}),
		snapshots.Text("done"),
	)
	st := session.NewMemory()
	res, err := runtime.Run(t.Context(), model, fn, runtime.Config{Store: st, SessionID: "rec"})
	require.NoError(t, err)
	require.Len(t, res.Steps, 3)

	first, err := st.AtStep(t.Context(), "rec", 0)
	require.NoError(t, err)
	require.Nil(t, first.Record, "the checkpoint before the first step has no record")
	for i, s := range res.Steps {
		cp, err := st.AtStep(t.Context(), "rec", i+1)
		require.NoError(t, err)
		rec := cp.Record
		require.NotNil(t, rec, "step %d", i)
		require.Equal(t, session.RecordVersion, rec.Version)
		require.Equal(t, i, rec.Step)
		require.Equal(t, s.InputTokens, rec.InputTokens)
		require.Equal(t, s.PrefixTokens, rec.PrefixTokens)
		require.Equal(t, s.Reply.Usage.InputTokens, rec.Usage.InputTokens)
		require.Equal(t, string(s.Reply.FinishReason), rec.Finish)
		assert.Empty(t, cmp.Diff(s.Effects, rec.Effects, cmpopts.EquateEmpty()), "step %d: effects mismatch (-want +got)", i)
		require.NotEmpty(t, rec.System)
		require.Positive(t, rec.DurationNS)
		require.Len(t, rec.Calls, len(s.Reply.Message.ToolCalls))
		for j, c := range rec.Calls {
			require.Equal(t, s.Reply.Message.ToolCalls[j].ID, c.ID)
			require.Positive(t, c.DurationNS, "call %s", c.ID)
		}
	}
	r0 := mustRecord(t, st, 1)
	require.Equal(t, []string{"tool:fail"}, r0.Disabled)
	require.Equal(t, []string{"add"}, r0.Tools)
	r1 := mustRecord(t, st, 2)
	require.Equal(t, []string{"add", "fail"}, r1.Tools)
	require.Contains(t, r1.Calls[1].Error, "deadline")
	require.Empty(t, r1.Calls[0].Error)
	r2 := mustRecord(t, st, 3)
	require.Equal(t, []session.CommitRecord{{Before: 6, After: 4}}, r2.Commits)
	require.Equal(t, r0.System, r2.System, "same system prompt, same id")
}

func mustRecord(t *testing.T, st session.Store, step int) *session.StepRecord {
	t.Helper()
	cp, err := st.AtStep(t.Context(), "rec", step)
	require.NoError(t, err)
	require.NotNil(t, cp.Record)
	return cp.Record
}

// TestShownRecord checks ShownRecord and RequestMessages against Record
// and Request: Record without the fields only a checkpoint reads; with
// requestOnly the step's number and request but its messages, and those
// messages; for steps with tools, a tool call and a typed answer, and a
// step without a request. The same record is filled again and again.
func TestShownRecord(t *testing.T) {
	type answer struct {
		N int `json:"n"`
	}
	fn := func(p *prompt.Prompt) error {
		p.DefSystem("role", "You add.")
		prompt.DefTool(p, "add", "add one", func(ctx context.Context, _ struct{}) (int, error) { return 1, nil })
		prompt.DefOutput[answer](p, "sum", "The sum.")
		p.User("add")
		return nil
	}
	model := snapshots.Script(snapshots.CallTool("add", nil), snapshots.Answer(answer{1}))
	res, err := runtime.Run(t.Context(), model, fn, runtime.Config{})
	require.NoError(t, err)
	require.Len(t, res.Steps, 2)
	var got session.StepRecord
	for i, s := range slices.Backward(res.Steps) {
		want := s.Record()
		require.NotEmpty(t, want.System, "step %d", i)
		require.NotEmpty(t, want.Tools, "step %d", i)
		want.System, want.Tools, want.Calls = "", nil, nil
		s.ShownRecord(&got, false)
		assert.Empty(t, cmp.Diff(want, &got), "step %d: ShownRecord mismatch (-want +got)", i)

		full := s.Record()
		want = &session.StepRecord{Version: full.Version, Step: full.Step, Request: full.Request}
		want.Request.Messages = nil
		s.ShownRecord(&got, true)
		assert.Empty(t, cmp.Diff(want, &got), "step %d: ShownRecord of the request mismatch (-want +got)", i)
		require.NotNil(t, got.Request, "step %d", i)
		require.NotEmpty(t, got.Request.Tools, "step %d", i)
		require.NotNil(t, got.Request.Output, "step %d", i)
		assert.Equal(t, s.Request().Messages, s.RequestMessages(), "step %d: RequestMessages", i)
	}
	assert.NotEmpty(t, res.Steps[0].Record().Calls, "the step with a tool call")
	none := &runtime.Step{Number: 3}
	none.ShownRecord(&got, true)
	assert.Equal(t, session.StepRecord{Version: session.RecordVersion, Step: 3}, got, "a step that sent no request")
	none.ShownRecord(&got, false)
	assert.Equal(t, *none.Record(), got, "a step that sent no request")
	assert.Nil(t, none.RequestMessages(), "a step that sent no request")
}
