package anthropic_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/providers/anthropic"
	"github.com/reprompt/reprompt/runtime"
)

type cityArgs struct {
	City string `json:"city" jsonschema:"the city"`
}

// TestAgent runs a runtime agent with a tool through the adapter, streamed,
// against the local server: a thinking step that calls the tool, a step
// with two parallel calls, and the answer. The server checks what the
// runtime's transcript becomes on the wire: the thinking block and its
// signature sent back first in the tool turn, the parallel results in
// one user message.
func TestAgent(t *testing.T) {
	srv := newServer(t)
	srv.answerFor = func(n int, r received) answer {
		msgs, _ := r.raw["messages"].([]any)
		switch n {
		case 0:
			return ok(t, "stream_thinking_tool.sse")
		case 1:
			if assert.Len(t, msgs, 3, "step 1 messages") {
				content := msgs[1].(map[string]any)["content"].([]any)
				assert.Empty(t, cmp.Diff(jsonOf(t, `{"type":"thinking","thinking":"The user wants the weather in Paris. I should call get_weather.","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}`), content[0]),
					"the thinking block leads the tool turn (-want +got)")
			}
			return ok(t, "stream_parallel_tools.sse")
		default:
			if assert.Len(t, msgs, 5, "step 2 messages") {
				results := msgs[4].(map[string]any)["content"].([]any)
				assert.Len(t, results, 2, "two tool results in one user message")
			}
			return ok(t, "stream_text.sse")
		}
	}
	m := srv.model(anthropic.Config{ThinkingBudget: 1024, MaxTokens: 2048}, nil)
	var mu sync.Mutex // parallel calls run concurrently
	var calls []string
	agent := func(p *prompt.Prompt) error {
		p.DefSystem("role", "You report the weather.")
		prompt.DefTool(p, "get_weather", "The weather in a city.", func(ctx context.Context, a cityArgs) (string, error) {
			mu.Lock()
			calls = append(calls, a.City)
			mu.Unlock()
			return fmt.Sprintf("18°C in %s", a.City), nil
		})
		return nil
	}
	var text string
	r := runtime.New(m, agent, runtime.Config{MaxSteps: 5, OnDelta: func(d llm.Delta) { text += d.Content }})
	res, err := r.Continue(context.Background(), "Weather in Paris, then Rome?")
	require.NoError(t, err)
	assert.Equal(t, "Paris.", res.Text)
	assert.Contains(t, text, "Paris.", "streamed text")
	assert.ElementsMatch(t, []string{"Paris", "Paris", "Rome"}, calls, "tool calls run")
	assert.Equal(t, 3, srv.attempts(), "requests")
	assert.Len(t, res.Steps, 3, "steps")
	assert.Equal(t, 512+384+21, res.Usage.InputTokens, "the run's input tokens")
}
