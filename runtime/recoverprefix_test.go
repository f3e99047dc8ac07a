package runtime_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
)

// longResultRejecter rejects as too long a request holding a long
// result, calls read at the first step and answers at the others.
type longResultRejecter struct{ rejected int }

func (m *longResultRejecter) Generate(_ context.Context, req *llm.Request) (*llm.Reply, error) {
	for _, msg := range req.Messages {
		if strings.Contains(msg.Content, "a long result") {
			m.rejected++
			return nil, &llm.ModelError{StatusCode: 400, ContextTooLong: true, Message: "prompt is too long"}
		}
	}
	if req.Step == 0 {
		return &llm.Reply{Message: defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: "c1", Name: "read", Arguments: json.RawMessage(`{}`)}}}}, nil
	}
	return &llm.Reply{Message: defs.AssistantMessage("done")}, nil
}

// TestRecoveredRequestAgainstTheLastSent: a request sent again after the
// provider rejected it as too long is compared with the last request the
// provider took, not with the rejected one, which it never cached: its
// shared prefix (Step.PrefixTokens, and so BilledInput) and
// Request.Repeated.
func TestRecoveredRequestAgainstTheLastSent(t *testing.T) {
	shorten := func(_ context.Context, s *effects.Step) error {
		if !s.ContextTooLong {
			return nil
		}
		out := s.CopyTranscript()
		for i := range out {
			if out[i].Role == defs.RoleTool {
				out[i].Content = "short"
			}
		}
		s.CommitMessages(out)
		return nil
	}
	fn := func(p *prompt.Prompt) error {
		p.DefSystem("role", "You read.")
		prompt.DefTool(p, "read", "reads", func(context.Context, struct{}) (string, error) { return "a long result", nil })
		p.Effect(effects.Always, shorten, effects.Recovery(), effects.Key("shorten"))
		p.User("go")
		return nil
	}
	model := &longResultRejecter{}
	res, err := runtime.Run(t.Context(), model, fn, runtime.Config{})
	require.NoError(t, err)
	require.Equal(t, 1, model.rejected, "requests rejected")
	require.Len(t, res.Steps, 2)
	first, second := res.Steps[0], res.Steps[1]
	require.True(t, second.Recovered, "step 1 recovered")
	// The recovered request [go, call, short] repeats the first request,
	// [go], whole; the rejected one, [go, call, long], only in part.
	assert.Equal(t, 1, second.Request().Repeated, "Repeated: the first request, whole")
	assert.Equal(t, first.InputTokens, second.PrefixTokens, "PrefixTokens: the first request's tokens")
}
