package openai

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
)

// TestPromptCacheFields sends requests through Generate and Stream to a
// server that validates each body against the OpenAPI description, and
// checks the prompt-cache fields each one carries.
func TestPromptCacheFields(t *testing.T) {
	const absent = "(absent)"
	tests := []struct {
		name          string
		cfg           Config
		session       string
		agent         string
		wantKey       string
		wantRetention string
	}{
		{"the session is the key", Config{Cache: CacheOn}, "s-1", "", "s-1", absent},
		{"a sub-agent's key names it", Config{Cache: CacheOn}, "s-1", "helper", "s-1/helper", absent},
		{"the configured key wins", Config{Cache: CacheOn, PromptCacheKey: "tenant-7"}, "s-1", "helper", "tenant-7", absent},
		{"no session, no key", Config{Cache: CacheOn}, "", "", absent, absent},
		{"24h to gpt-5", Config{Cache: CacheOn, Model: "gpt-5", PromptCacheRetention: "24h"}, "s-1", "", "s-1", "24h"},
		{"24h to gpt-4.1", Config{Cache: CacheOn, Model: "gpt-4.1-mini", PromptCacheRetention: "24h"}, "s-1", "", "s-1", "24h"},
		{"24h dropped for gpt-4o", Config{Cache: CacheOn, Model: "gpt-4o", PromptCacheRetention: "24h"}, "s-1", "", "s-1", absent},
		{"in_memory to gpt-4o", Config{Cache: CacheOn, Model: "gpt-4o", PromptCacheRetention: "in_memory"}, "s-1", "", "s-1", "in_memory"},
		{"in_memory dropped for gpt-5.5", Config{Cache: CacheOn, Model: "gpt-5.5", PromptCacheRetention: "in_memory"}, "s-1", "", "s-1", absent},
		{"not OpenAI's model: as set", Config{Cache: CacheOn, Model: "qwen3:4b", PromptCacheRetention: "24h"}, "s-1", "", "s-1", "24h"},
		{"off", Config{Cache: CacheOff, PromptCacheKey: "k", PromptCacheRetention: "24h", Model: "gpt-5"}, "s-1", "", absent, absent},
		// The fake server is not api.openai.com: CacheAuto sends nothing.
		{"auto, another server", Config{PromptCacheKey: "k", PromptCacheRetention: "24h", Model: "gpt-5"}, "s-1", "", absent, absent},
	}
	field := func(body map[string]any, k string) string {
		v, ok := body[k]
		if !ok {
			return absent
		}
		return fmt.Sprint(v)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeServer(t, reply{file: "text.json"}, reply{file: "stream_text.sse"})
			cfg := f.config(tt.cfg.Model, nil)
			cfg.Cache, cfg.PromptCacheKey, cfg.PromptCacheRetention = tt.cfg.Cache, tt.cfg.PromptCacheKey, tt.cfg.PromptCacheRetention
			m := New(cfg)
			req := &llm.Request{System: "sys", Messages: conversation(), Tools: []llm.ToolSpec{weatherTool}, SessionID: tt.session, Agent: tt.agent}
			_, err := m.Generate(t.Context(), req)
			require.NoError(t, err, "Generate")
			_, err = m.Stream(t.Context(), req, nil)
			require.NoError(t, err, "Stream")
			require.Equal(t, 2, f.hits(), "requests the server saw (each valid against the spec)")
			for i := range 2 {
				body := f.body(i)
				assert.Equal(t, tt.wantKey, field(body, "prompt_cache_key"), "request %d: prompt_cache_key", i)
				assert.Equal(t, tt.wantRetention, field(body, "prompt_cache_retention"), "request %d: prompt_cache_retention", i)
			}
		})
	}
}

// TestPromptCacheAuto: with the zero Cache, requests to OpenAI's API carry
// the fields, and requests to another server do not.
func TestPromptCacheAuto(t *testing.T) {
	route := chatRoute(t)
	req := &llm.Request{Messages: []defs.Message{defs.UserMessage("hi")}, SessionID: "s-9"}
	for _, tt := range []struct {
		baseURL string
		want    bool
	}{
		{"", true},
		{"https://api.openai.com/v1/", true},
		{"http://localhost:11434/v1", false},
		{"https://openrouter.ai/api/v1", false},
	} {
		m := New(Config{BaseURL: tt.baseURL, Model: "gpt-5-mini", PromptCacheRetention: "24h"})
		for _, stream := range []bool{false, true} {
			b, err := m.body(req, stream)
			require.NoError(t, err)
			require.NoError(t, validateChatRequest(route, b), "%s: body against the spec", b)
			var body map[string]any
			require.NoError(t, json.Unmarshal(b, &body))
			_, key := body["prompt_cache_key"]
			_, retention := body["prompt_cache_retention"]
			assert.Equal(t, tt.want, key, "BaseURL %q, stream %t: prompt_cache_key sent", tt.baseURL, stream)
			assert.Equal(t, tt.want, retention, "BaseURL %q, stream %t: prompt_cache_retention sent", tt.baseURL, stream)
			if tt.want {
				assert.Equal(t, "s-9", body["prompt_cache_key"], "prompt_cache_key")
			}
		}
	}
}

// TestPromptCacheKeyFromTheCache: the key changes from request to request
// while the rest of the body comes from the encoder's cache, and a key
// that needs escaping stays valid JSON.
func TestPromptCacheKeyFromTheCache(t *testing.T) {
	route := chatRoute(t)
	m := New(Config{Cache: CacheOn})
	msgs := conversation()
	for i, id := range []string{"a", "a", `b "quoted" \ </script>`, "", "a"} {
		b, err := m.body(&llm.Request{Messages: msgs[:2+i%3], Tools: []llm.ToolSpec{weatherTool}, SessionID: id}, i%2 == 1)
		require.NoError(t, err)
		require.NoError(t, validateChatRequest(route, b), "request %d: %s", i, b)
		var body map[string]any
		require.NoError(t, json.Unmarshal(b, &body), "request %d", i)
		if id == "" {
			assert.NotContains(t, body, "prompt_cache_key", "request %d", i)
			continue
		}
		assert.Equal(t, id, body["prompt_cache_key"], "request %d: prompt_cache_key", i)
	}
}

// TestSpecChecksCacheFields: the OpenAPI description in testdata declares
// the fields, so validating a body checks them (a wrong retention fails)
// rather than letting any unknown field through.
func TestSpecChecksCacheFields(t *testing.T) {
	route := chatRoute(t)
	ok := `{"model":"gpt-5","messages":[{"role":"user","content":"hi"}],"prompt_cache_key":"s-1","prompt_cache_retention":"24h"}`
	require.NoError(t, validateChatRequest(route, []byte(ok)))
	for _, bad := range []string{
		`{"model":"gpt-5","messages":[{"role":"user","content":"hi"}],"prompt_cache_retention":"1w"}`,
		`{"model":"gpt-5","messages":[{"role":"user","content":"hi"}],"prompt_cache_key":7}`,
	} {
		assert.Error(t, validateChatRequest(route, []byte(bad)), "%s is not valid", bad)
	}
}
