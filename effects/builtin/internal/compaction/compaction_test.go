package compaction

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/effects/builtin/internal/transcript"
	"github.com/reprompt/reprompt/tokens"
)

// TestRenderedTokensBoundTheRenderedText checks that renderedTokens, which
// the summary request's bound uses instead of counting each rendered
// message, is at least the exact count of the rendered text, and not far
// above it, under both exact encodings and the estimate.
func TestRenderedTokensBoundTheRenderedText(t *testing.T) {
	long := strings.Repeat("The quick brown fox jumps over the lazy dog; ünïcödé 12345. ", 120) // clipped at 2000 and 4000
	msgs := []defs.Message{
		{Role: defs.RoleUser, Content: "What is in config.yaml?"},
		{Role: defs.RoleUser, Content: long},
		{Role: defs.RoleAssistant, Content: "Let me look."},
		{Role: defs.RoleAssistant, Content: long, ToolCalls: []defs.ToolCall{
			{ID: "call_1", Name: "read_file", Arguments: []byte(`{"path":"config.yaml"}`)},
			{ID: "call_2", Name: "grep", Arguments: []byte(`{"pattern":"` + strings.Repeat("x|", 400) + `"}`)},
		}},
		{Role: defs.RoleTool, ToolCallID: "call_1", Name: "read_file", Content: "name: demo\nmode: fast\n"},
		{Role: defs.RoleTool, ToolCallID: "call_2", Name: "grep", Content: long, IsError: true},
		{Role: defs.RoleTool, ToolCallID: "call_3", Content: "   \n  "},
		{Role: defs.RoleSystem, Content: "Be brief."},
		{Role: defs.RoleTool, ToolCallID: "call_4", Name: "read_file", Content: long[:2400]}, // clipped by a fifth
	}
	for _, c := range []tokens.Counter{tokens.O200k(), tokens.Cl100k(), tokens.ForModel("llama-3")} {
		s := effects.NewStep(0, nil)
		s.Budget.Count = func(m []defs.Message) int {
			n := 0
			for _, x := range m {
				n += c.Message(x)
			}
			return n
		}
		countText := func(text string) int { return s.Budget.Tokens([]defs.Message{{Role: defs.RoleUser, Content: text}}) }
		bounded := 0
		for i := range msgs {
			got := renderedTokens(s, msgs[i:i+1], countText)
			if got < 0 {
				continue // counted as rendered
			}
			bounded++
			exact := countText(renderMessage(&msgs[i]))
			assert.GreaterOrEqual(t, got, exact, "%s: message %d", c.Name(), i)
			assert.LessOrEqual(t, got, exact+exact/4+16, "%s: message %d: too loose a bound", c.Name(), i)
		}
		assert.Equal(t, 6, bounded, "%s: the messages not clipped by much are bounded", c.Name())
	}
	summary := defs.Message{Role: defs.RoleUser, Content: "s", Meta: map[string]string{transcript.MetaSummary: "1", transcript.MetaSummaryText: "s"}}
	assert.Equal(t, -1, renderedTokens(effects.NewStep(0, nil), []defs.Message{summary}, func(string) int { return 0 }))
}
