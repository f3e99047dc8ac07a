package runtime_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

const secret = "sk-runtime-secret-42"

// secretModel is a scripted model that holds secret and redacts it, as
// an adapter with an API key does (llm.Redactor).
type secretModel struct{ *snapshots.Model }

func (secretModel) Redact(s string) string { return strings.ReplaceAll(s, secret, "[redacted]") }

// TestTraceAndLogRedact has a model whose replies, tool calls, errors and
// the state an effect depends on hold the model's secret, with content
// traced and everything logged: every span and record shows the
// redacted text, and the run works with the text as it came (issue 23
// item 8).
func TestTraceAndLogRedact(t *testing.T) { synctest.Test(t, testTraceAndLogRedact) }

func testTraceAndLogRedact(t *testing.T) {
	tp, exp := tracer(t)
	var logs bytes.Buffer
	busy := &llm.ModelError{StatusCode: 503, Retryable: true, Message: "busy for key " + secret}
	denied := &llm.ModelError{StatusCode: 401, Message: "bad key " + secret}
	model := secretModel{snapshots.Script(
		snapshots.Reply{Text: "Your key: " + secret, Calls: []snapshots.Call{{Name: "echo", Args: echoArgs{Text: secret}}}},
		snapshots.Fail(busy),
		snapshots.Fail(denied),
	)}
	var seen string
	agent := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "echo", "Echo.", func(_ context.Context, a echoArgs) (string, error) {
			seen = a.Text
			return "", fmt.Errorf("refused %s", a.Text)
		})
		// A dependency whose value, shown in the effect's reason, holds
		// the secret from the second step on.
		dep := ""
		if p.Step() > 0 {
			dep = "seen " + secret
		}
		p.Effect(effects.On(dep), func(context.Context, *effects.Step) error { return nil })
		p.User("hi " + secret)
		return nil
	}
	_, err := runtime.Run(context.Background(), model, agent, runtime.Config{
		TracerProvider: tp, TraceContent: true, Retries: 1,
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), secret, "the run's own error is the model's, unchanged")
	assert.Equal(t, secret, seen, "the tool got the arguments as the model sent them")

	var dump strings.Builder
	for _, s := range exp.GetSpans() {
		fmt.Fprintf(&dump, "%s %v %v %v\n", s.Name, s.Attributes, s.Events, s.Status)
	}
	assert.NotContains(t, dump.String(), secret, "spans")
	assert.NotContains(t, logs.String(), secret, "logs")
	for _, want := range []string{"Your key: [redacted]", "hi [redacted]", `{"text":"[redacted]"}`, "refused [redacted]", "bad key [redacted]", "seen [redacted]"} {
		assert.Contains(t, dump.String(), want, "spans show the redacted text")
	}
	for _, want := range []string{"busy for key [redacted]", "bad key [redacted]"} {
		assert.Contains(t, logs.String(), want, "logs show the redacted text")
	}
}
