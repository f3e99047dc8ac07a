package builtin_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects/builtin"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/runtime"
)

// toolCallingSummarizer answers the run's steps with reads, and a summary
// request that carries the run's tools (a continued one) with a tool call
// and the text a model writes before one; a summary request without tools
// gets the summary.
type toolCallingSummarizer struct {
	mu        sync.Mutex
	steps     int
	continued int
	plain     int
}

func (m *toolCallingSummarizer) Generate(_ context.Context, req *llm.Request) (*llm.Reply, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	msg := defs.Message{Role: defs.RoleAssistant}
	switch {
	case req.Purpose == llm.PurposeSummary && len(req.Tools) > 0:
		m.continued++
		msg.Content = "Let me read one more file first."
		msg.ToolCalls = []defs.ToolCall{{ID: "sum_1", Name: "read_file", Arguments: json.RawMessage(`{"path":"g.go"}`)}}
	case req.Purpose == llm.PurposeSummary:
		m.plain++
		msg.Content = "The user asked to read files; f.go was read many times."
	default:
		m.steps++
		if m.steps > 30 {
			msg.Content = "Done."
			break
		}
		msg.ToolCalls = []defs.ToolCall{{ID: "c" + strings.Repeat("x", m.steps), Name: "read_file", Arguments: json.RawMessage(`{"path":"f.go"}`)}}
	}
	return &llm.Reply{Message: msg}, nil
}

// TestContinuedSummaryThatCallsATool: a continued summary request carries
// the run's tools; a reply that calls one is not a summary, whatever text
// comes before the call, and the summary is asked for again without
// tools.
func TestContinuedSummaryThatCallsATool(t *testing.T) {
	var infos []builtin.Info
	cfg := builtin.Defaults(builtin.Profile{Window: 6000, OutputReserve: 1000})
	cfg.OnCompaction = func(i builtin.Info) { infos = append(infos, i) }
	model := &toolCallingSummarizer{}
	res, err := runtime.Run(context.Background(), model, agent(cfg, 1500), runtime.Config{Window: 6000, Reserve: 1000})
	require.NoError(t, err)
	require.NotZero(t, model.continued, "no continued summary request: %d compactions", len(infos))
	var summary string
	for _, s := range res.Steps {
		if req := s.Request(); req != nil && len(req.Messages) > 1 && req.Messages[1].Meta[builtin.MetaSummary] != "" {
			summary = req.Messages[1].Content
		}
	}
	require.NotEmpty(t, summary, "no summary in the requests")
	assert.NotContains(t, summary, "Let me read one more file first.", "the text of a reply that called a tool taken as the summary")
	assert.Contains(t, summary, "f.go was read many times.", "the summary asked for without tools")
}

// tooLongContinuer answers the run's steps with reads, rejects a summary
// request that continues the run's request (it carries the run's tools)
// as too long for the window, and answers one without tools.
type tooLongContinuer struct {
	toolCallingSummarizer
}

func (m *tooLongContinuer) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	if req.Purpose == llm.PurposeSummary && len(req.Tools) > 0 {
		m.mu.Lock()
		m.continued++
		m.mu.Unlock()
		return nil, &llm.ModelError{StatusCode: 400, ContextTooLong: true, Message: "prompt is too long: 210000 tokens > 200000 maximum"}
	}
	return m.toolCallingSummarizer.Generate(ctx, req)
}

// TestContinuedSummaryRejected: a continued summary request the provider
// rejects (here as too long: the continuation carries the whole history,
// which SummaryInputTokens does not bound) is asked again as a summary of
// its own, bounded, before compaction falls back to a summary made by rule.
func TestContinuedSummaryRejected(t *testing.T) {
	var infos []builtin.Info
	cfg := builtin.Defaults(builtin.Profile{Window: 6000, OutputReserve: 1000})
	cfg.OnCompaction = func(i builtin.Info) { infos = append(infos, i) }
	model := &tooLongContinuer{}
	res, err := runtime.Run(context.Background(), model, agent(cfg, 1500), runtime.Config{Window: 6000, Reserve: 1000})
	require.NoError(t, err)
	require.NotZero(t, model.continued, "no continued summary request: %d compactions", len(infos))
	assert.Equal(t, model.continued, model.plain, "each rejected continuation asked again without tools")
	for _, i := range infos {
		assert.NoError(t, i.Err, "compaction at step %d", i.Step)
		assert.Equal(t, builtin.StrategySummarize, i.Strategy, "compaction at step %d: the model's summary, not a fallback", i.Step)
	}
	var summary string
	for _, s := range res.Steps {
		if req := s.Request(); req != nil && len(req.Messages) > 1 && req.Messages[1].Meta[builtin.MetaSummary] != "" {
			summary = req.Messages[1].Content
		}
	}
	assert.Contains(t, summary, "f.go was read many times.", "the summary asked for without tools")
}
