package snapshots_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// verdict is the typed answer of the reviewer below.
type verdict struct {
	Approved bool     `json:"approved" jsonschema:"whether the change can be merged"`
	Reasons  []string `json:"reasons"`
	Severity string   `json:"severity,omitempty" jsonschema:"low, medium or high; empty when approved"`
}

type diffArgs struct {
	File string `json:"file"`
}

// reviewer reads a diff with a tool, then answers with a verdict.
func reviewer(p *prompt.Prompt) error {
	p.DefSystem("role", "You review changes.")
	prompt.DefTool(p, "read_diff", "Read the diff of a file.", func(ctx context.Context, a diffArgs) (string, error) {
		return "- x := 1\n+ x := 2", nil
	})
	prompt.DefOutput[verdict](p, "verdict", "Your verdict on the change.")
	p.User("Review the change to main.go.")
	return nil
}

// reviewScript reads the diff, gives an answer without its required
// "reasons" (invalid: sent back), then a valid one.
func reviewScript() *snapshots.Model {
	return snapshots.Script(
		snapshots.CallTool("read_diff", diffArgs{File: "main.go"}),
		snapshots.Answer(map[string]any{"approved": true, "severity": nil}),
		snapshots.Answer(verdict{Approved: true, Reasons: []string{"a one-line change"}}),
	)
}

// TestStructuredOutput is a snapshot of an agent with a typed answer, in
// both modes: with the answer tool (the scripted model's default) and with
// a response_format. The invalid answer is sent back with its validation
// error, as a tool result or as a user message.
func TestStructuredOutput(t *testing.T) {
	for _, mode := range []llm.OutputMode{llm.OutputTool, llm.OutputNative} {
		t.Run(string(mode), func(t *testing.T) {
			res := snapshots.Run(t, reviewer, reviewScript(), snapshots.Config(runtime.Config{OutputMode: mode}))
			v, err := runtime.Output[verdict](res)
			require.NoError(t, err)
			assert.Empty(t, cmp.Diff(verdict{Approved: true, Reasons: []string{"a one-line change"}}, v), "output mismatch (-want +got)")
			require.JSONEq(t, `{"approved":true,"reasons":["a one-line change"]}`, res.Text) // the answer as the model gave it
		})
	}
}

// TestStructuredOutputRetriesExhausted: answers that stay invalid end the
// run with an *OutputError after Config.OutputRetries were sent back.
func TestStructuredOutputRetriesExhausted(t *testing.T) {
	for _, mode := range []llm.OutputMode{llm.OutputTool, llm.OutputNative} {
		t.Run(string(mode), func(t *testing.T) {
			model := snapshots.Script(
				snapshots.Answer(`{"approved": "yes"}`),
				snapshots.Answer(`not JSON`),
				snapshots.Answer(`{"approved": true}`),
			)
			res, err := runtime.Run(context.Background(), model, reviewer, runtime.Config{OutputMode: mode, OutputRetries: 1})
			var oe *runtime.OutputError
			require.ErrorAs(t, err, &oe)
			require.Equal(t, 1, oe.Step)
			require.Equal(t, "verdict", oe.Output)
			require.Equal(t, "not JSON", oe.Raw)
			require.Equal(t, 2, oe.Invalid)
			require.ErrorContains(t, err, "not valid JSON")
			require.Len(t, res.Steps, 2)
			require.Equal(t, 1, model.Remaining(), "the run must stop at the second invalid answer")
			_, err = runtime.Output[verdict](res)
			require.ErrorIs(t, err, runtime.ErrNoOutput)
		})
	}
}

// TestStructuredOutputRefusal: a refusal ends the run with an
// *OutputError carrying it, without retrying.
func TestStructuredOutputRefusal(t *testing.T) {
	model := snapshots.Script(snapshots.Refuse("I cannot review this."))
	res, err := runtime.Run(context.Background(), model, reviewer, runtime.Config{OutputMode: llm.OutputNative})
	require.Contains(t, string(snapshots.Format(res.Steps, err)), "-- step 0/reply --\nfinish: stop\nrefusal: I cannot review this.\n")
	var oe *runtime.OutputError
	require.ErrorAs(t, err, &oe)
	require.Equal(t, "I cannot review this.", oe.Refusal)
	require.NoError(t, oe.Err)
	require.ErrorContains(t, err, `output "verdict": the model refused: I cannot review this.`)
}

// TestStructuredOutputRecordReplay records a run with a typed answer (an
// invalid one retried) and replays it: same steps, same answer, same mode.
func TestStructuredOutputRecordReplay(t *testing.T) {
	for _, native := range []bool{false, true} {
		name := "tool"
		if native {
			name = "native"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			real := reviewScript()
			if native {
				real.WithNativeOutput()
			}
			rec := snapshots.Record(real)
			want, err := runtime.Run(ctx, rec, reviewer, runtime.Config{})
			require.NoError(t, err)
			path := filepath.Join(t.TempDir(), "recording.json")
			require.NoError(t, rec.WriteFile(path))
			replay, err := snapshots.Replay(path)
			require.NoError(t, err)
			require.Equal(t, native, replay.NativeOutput())
			got, err := runtime.Run(ctx, replay, reviewer, runtime.Config{})
			require.NoError(t, err)
			assert.Empty(t, cmp.Diff(string(snapshots.Format(want.Steps, nil)), string(snapshots.Format(got.Steps, nil))), "replayed run differs from the recorded one (-recorded +replayed)")
			wantMode := llm.OutputTool
			if native {
				wantMode = llm.OutputNative
			}
			require.Equal(t, wantMode, got.Steps[0].Request().Output.Mode)
			v, err := runtime.Output[verdict](got)
			require.NoError(t, err)
			require.Equal(t, []string{"a one-line change"}, v.Reasons)
		})
	}
}

// TestAnswerWithoutOutput: snapshots.Answer for a request that asks for no
// typed answer fails the model call with an error saying so.
func TestAnswerWithoutOutput(t *testing.T) {
	model := snapshots.Script(snapshots.Answer(verdict{}))
	_, err := runtime.Run(context.Background(), model, func(p *prompt.Prompt) error {
		p.User("Hi.")
		return nil
	}, runtime.Config{})
	require.Error(t, err)
	require.ErrorContains(t, err, "declare one with prompt.DefOutput")
	require.False(t, errors.Is(err, runtime.ErrNoOutput))
}
