package openai

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
)

// TestUsageCacheWrites reads the cache writes a server reports, streamed
// and not, in OpenAI's shape (prompt_tokens_details.cache_write_tokens)
// and in the shape of a proxy serving Anthropic's models
// (cache_creation_input_tokens).
func TestUsageCacheWrites(t *testing.T) {
	openAI := `{"prompt_tokens":2000,"completion_tokens":5,"total_tokens":2005,"prompt_tokens_details":{"cached_tokens":1024,"cache_write_tokens":900}}`
	proxy := `{"prompt_tokens":2000,"completion_tokens":5,"total_tokens":2005,"prompt_tokens_details":{"cached_tokens":1024},"cache_creation_input_tokens":900}`
	tooMany := `{"prompt_tokens":2000,"completion_tokens":5,"total_tokens":2005,"prompt_tokens_details":{"cached_tokens":1500,"cache_write_tokens":900}}`
	none := `{"prompt_tokens":2000,"completion_tokens":5,"total_tokens":2005,"prompt_tokens_details":{"cached_tokens":1024,"cache_write_tokens":0}}`
	tests := []struct {
		name  string
		usage string
		want  llm.Usage
	}{
		{"openai", openAI, llm.Usage{InputTokens: 2000, OutputTokens: 5, CachedTokens: 1024, CacheWriteTokens: 900}},
		{"proxy", proxy, llm.Usage{InputTokens: 2000, OutputTokens: 5, CachedTokens: 1024, CacheWriteTokens: 900}},
		{"writes cut to what reads leave", tooMany, llm.Usage{InputTokens: 2000, OutputTokens: 5, CachedTokens: 1500, CacheWriteTokens: 500}},
		{"no writes", none, llm.Usage{InputTokens: 2000, OutputTokens: 5, CachedTokens: 1024}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			whole := `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-5","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":` + tt.usage + `}`
			f := newFakeServer(t, reply{body: whole}, reply{events: []string{
				`{"id":"c2","object":"chat.completion.chunk","created":1,"model":"gpt-5","choices":[{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":null}]}`,
				`{"id":"c2","object":"chat.completion.chunk","created":1,"model":"gpt-5","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
				`{"id":"c2","object":"chat.completion.chunk","created":1,"model":"gpt-5","choices":[],"usage":` + tt.usage + `}`,
				`[DONE]`,
			}})
			m := New(f.config("gpt-5", nil))
			req := &llm.Request{Messages: []defs.Message{defs.UserMessage("hi")}}
			got, err := m.Generate(context.Background(), req)
			require.NoError(t, err, "Generate")
			assert.Equal(t, tt.want, got.Usage, "Generate: usage")
			got, err = m.Stream(context.Background(), req, nil)
			require.NoError(t, err, "Stream")
			assert.Equal(t, tt.want, got.Usage, "Stream: usage")
		})
	}
}
