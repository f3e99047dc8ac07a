package openai

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/runtime"
)

// TestLive talks to a real server configured by OPENAI_BASE_URL,
// OPENAI_MODEL and OPENAI_API_KEY. It runs only when OPENAI_LIVE_TEST=1,
// for example against Ollama:
//
//	OPENAI_LIVE_TEST=1 OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=qwen3:4b \
//		go test -run Live -v ./providers/openai/
func TestLive(t *testing.T) {
	if os.Getenv("OPENAI_LIVE_TEST") != "1" {
		t.Skip("set OPENAI_LIVE_TEST=1 (and OPENAI_BASE_URL, OPENAI_MODEL, OPENAI_API_KEY) to run against a real server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m := FromEnv()
	req := &llm.Request{
		System:   "You answer with one word.",
		Messages: []defs.Message{defs.UserMessage("What is the capital of France?")},
	}
	reply, err := m.Generate(ctx, req)
	require.NoError(t, err, "Generate")
	t.Logf("Generate: %q (reasoning %d bytes), %s, %+v", reply.Message.Content, len(reply.Message.Reasoning), reply.FinishReason, reply.Usage)
	assert.Contains(t, strings.ToLower(reply.Message.Content), "paris", "reply %q does not mention Paris", reply.Message.Content)

	var streamed strings.Builder
	reply, err = m.Stream(ctx, req, func(d llm.Delta) { streamed.WriteString(d.Content) })
	require.NoError(t, err, "Stream")
	t.Logf("Stream: %q, %s, %+v", reply.Message.Content, reply.FinishReason, reply.Usage)
	assert.Equal(t, reply.Message.Content, streamed.String(), "deltas %q differ from the reply %q", streamed.String(), reply.Message.Content)

	req.Messages = []defs.Message{defs.UserMessage("Use the tool to get the weather in Paris.")}
	req.Tools = []llm.ToolSpec{weatherTool}
	reply, err = m.Stream(ctx, req, nil)
	require.NoError(t, err, "Stream with tools")
	t.Logf("Stream with tools: %+v, %s", reply.Message.ToolCalls, reply.FinishReason)

	// A typed answer, in both modes (a server that rejects a
	// response_format fails the first).
	for _, mode := range []llm.OutputMode{llm.OutputNative, llm.OutputTool} {
		res, err := runtime.Run(ctx, m, forecaster, runtime.Config{OutputMode: mode, MaxSteps: 4})
		if !assert.NoError(t, err, "typed answer (%s)", mode) {
			continue
		}
		f, err := runtime.Output[forecast](res)
		t.Logf("typed answer (%s) in %d steps: %+v, %v", mode, len(res.Steps), f, err)
		assert.NoError(t, err, "typed answer (%s): %+v", mode, f)
		assert.NotEmpty(t, f.City, "typed answer (%s): %+v, %v", mode, f, err)
	}
}
