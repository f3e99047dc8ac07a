package snapshots_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// TestRedactionAppliesBeforeComparingSteps: a system prompt that differs
// between steps only in a redacted value is written once, then "as in".
func TestRedactionAppliesBeforeComparingSteps(t *testing.T) {
	fn := func(p *prompt.Prompt) error {
		p.DefSystem("clock", fmt.Sprintf("now: 12:00:%02d", p.Step()))
		prompt.DefTool(p, "tick", "t", func(ctx context.Context, _ struct{}) (string, error) { return "ok", nil })
		p.User("go")
		return nil
	}
	res, err := runtime.Run(context.Background(), snapshots.Script(snapshots.CallTool("tick", nil), snapshots.Text("done")), fn, runtime.Config{})
	require.NoError(t, err)
	redact := snapshots.Redact(regexp.MustCompile(`\d\d:\d\d:\d\d`), "<time>")
	out := string(snapshots.Format(res.Steps, nil, redact))
	assert.Contains(t, out, "-- step 1/system --\n(as in step 0)\n", "step 1's system prompt differs only in a redacted value but was written again:\n%s", out)
	assertFormatStep(t, res.Steps, redact)
}

// TestErrorTextHasNoLineNumbers: the run error in a golden file names
// files without line numbers.
func TestErrorTextHasNoLineNumbers(t *testing.T) {
	out := string(snapshots.Format(nil, errors.New("effect #0 (registered at agent.go:18) panicked at tools.go:7")))
	assert.NotContains(t, out, ".go:", "error line keeps line numbers")
	assert.Contains(t, out, "agent.go)", "error line keeps line numbers")
}

func TestNoFinishReplaysNoFinishReason(t *testing.T) {
	m := snapshots.Script(snapshots.Reply{Text: "hi", Finish: snapshots.NoFinish}, snapshots.Text("hi"))
	r1, err := m.Generate(context.Background(), &llm.Request{})
	require.NoError(t, err)
	r2, err := m.Generate(context.Background(), &llm.Request{})
	require.NoError(t, err)
	assert.Empty(t, r1.FinishReason, "finish reason of the NoFinish reply")
	assert.Equal(t, llm.FinishStop, r2.FinishReason, "finish reason of the default reply")
}
