package openai

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/providers/openai/internal/wire"
)

var weatherTool = llm.ToolSpec{
	Name:        "get_weather",
	Description: "Current weather for a city.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["city"]}`),
}

// conversation is a transcript with every role and a completed tool round.
func conversation() []defs.Message {
	return []defs.Message{
		defs.UserMessage("Weather in Paris and Tokyo?"),
		{Role: defs.RoleAssistant, Reasoning: "two cities", ToolCalls: []defs.ToolCall{
			{ID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
			{ID: "call_2", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Tokyo"}`)},
		}},
		{Role: defs.RoleTool, ToolCallID: "call_1", Name: "get_weather", Content: "18°C, cloudy"},
		{Role: defs.RoleTool, ToolCallID: "call_2", Name: "get_weather", Content: "", IsError: true},
		{Role: defs.RoleSystem, Content: "Answer briefly."},
		defs.AssistantMessage("Paris 18°C; Tokyo unknown."),
		{Role: defs.RoleUser, Name: "ann", Content: "Thanks"},
	}
}

func ptr[T any](v T) *T { return &v }

// TestOpenAPIRequestMapping checks the body go-openai sends for each kind
// of configuration; the fake server validates every body against the spec.
func TestOpenAPIRequestMapping(t *testing.T) {
	wantMessages := []any{
		map[string]any{"role": "system", "content": "Be helpful."},
		map[string]any{"role": "user", "content": "Weather in Paris and Tokyo?"},
		map[string]any{"role": "assistant", "tool_calls": []any{
			map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": `{"city":"Paris"}`}},
			map[string]any{"id": "call_2", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": `{"city":"Tokyo"}`}},
		}},
		map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "18°C, cloudy"},
		map[string]any{"role": "tool", "tool_call_id": "call_2", "content": ""},
		map[string]any{"role": "system", "content": "Answer briefly."},
		map[string]any{"role": "assistant", "content": "Paris 18°C; Tokyo unknown."},
		map[string]any{"role": "user", "name": "ann", "content": "Thanks"},
	}
	wantTools := []any{map[string]any{"type": "function", "function": map[string]any{
		"name": "get_weather", "description": "Current weather for a city.",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{
			"city": map[string]any{"type": "string"},
			"unit": map[string]any{"type": "string", "enum": []any{"celsius", "fahrenheit"}},
		}, "required": []any{"city"}},
	}}}

	tests := []struct {
		name   string
		cfg    func(*Config)
		req    llm.Request
		stream bool
		// want holds the fields checked; a nil value means "absent".
		want map[string]any
	}{
		{
			name: "full conversation with tools",
			cfg:  func(c *Config) { c.Model = "gpt-4.1" },
			req:  llm.Request{System: "Be helpful.", Messages: conversation(), Tools: []llm.ToolSpec{weatherTool}},
			want: map[string]any{"model": "gpt-4.1", "messages": wantMessages, "tools": wantTools, "stream": false, "stream_options": nil, "temperature": nil, "max_tokens": nil},
		},
		{
			name: "no system prompt",
			req:  llm.Request{Messages: []defs.Message{defs.UserMessage("hi")}},
			want: map[string]any{"model": DefaultModel, "messages": []any{map[string]any{"role": "user", "content": "hi"}}, "tools": nil},
		},
		{
			name: "classic model takes max_tokens and an explicit zero temperature",
			cfg: func(c *Config) {
				c.Model, c.MaxTokens, c.Temperature, c.TopP, c.Seed = "gpt-4o", 256, ptr(0.0), ptr(0.9), ptr(7)
				c.Stop = []string{"END"}
			},
			req:  llm.Request{Messages: []defs.Message{defs.UserMessage("hi")}},
			want: map[string]any{"max_tokens": 256.0, "max_completion_tokens": nil, "temperature": 0.0, "top_p": 0.9, "seed": 7.0, "stop": []any{"END"}},
		},
		{
			name: "reasoning model takes max_completion_tokens and no temperature",
			cfg: func(c *Config) {
				c.Model, c.MaxTokens, c.Temperature, c.TopP, c.ReasoningEffort = "o3-mini", 1024, ptr(0.2), ptr(0.5), "high"
			},
			req:  llm.Request{Messages: []defs.Message{defs.UserMessage("hi")}},
			want: map[string]any{"max_completion_tokens": 1024.0, "max_tokens": nil, "temperature": nil, "top_p": nil, "reasoning_effort": "high"},
		},
		{
			name: "gpt-5 family with tools and parallel_tool_calls",
			cfg: func(c *Config) {
				c.Model, c.MaxTokens, c.Temperature, c.ParallelToolCalls = "gpt-5-mini", 2048, ptr(0.7), ptr(false)
			},
			req:  llm.Request{Messages: []defs.Message{defs.UserMessage("hi")}, Tools: []llm.ToolSpec{weatherTool}},
			want: map[string]any{"max_completion_tokens": 2048.0, "temperature": nil, "parallel_tool_calls": false},
		},
		{
			name: "forced classic mode for a local model",
			cfg: func(c *Config) {
				c.Model, c.Reasoning, c.MaxTokens, c.Temperature = "o3-distill:7b", ReasoningOff, 64, ptr(0.3)
			},
			req:  llm.Request{Messages: []defs.Message{defs.UserMessage("hi")}},
			want: map[string]any{"max_tokens": 64.0, "temperature": 0.3},
		},
		{
			name:   "stream asks for usage",
			req:    llm.Request{Messages: []defs.Message{defs.UserMessage("hi")}},
			stream: true,
			want:   map[string]any{"stream": true, "stream_options": map[string]any{"include_usage": true}},
		},
		{
			name:   "stream without usage",
			cfg:    func(c *Config) { c.OmitStreamUsage = true },
			req:    llm.Request{Messages: []defs.Message{defs.UserMessage("hi")}},
			stream: true,
			want:   map[string]any{"stream": true, "stream_options": nil},
		},
		{
			name: "replayed reasoning, tool without parameters, invalid arguments sent back verbatim",
			cfg:  func(c *Config) { c.ReplayReasoning = true },
			req: llm.Request{
				Messages: []defs.Message{
					defs.UserMessage("go"),
					{Role: defs.RoleAssistant, Reasoning: "hmm", ToolCalls: []defs.ToolCall{{ID: "c1", Name: "now", Arguments: wire.ToolArguments(`{"broken`)}}},
					{Role: defs.RoleTool, ToolCallID: "c1", Content: "error: invalid arguments"},
				},
				Tools: []llm.ToolSpec{{Name: "now", Description: "The time."}},
			},
			want: map[string]any{
				"messages": []any{
					map[string]any{"role": "user", "content": "go"},
					map[string]any{"role": "assistant", "reasoning_content": "hmm", "tool_calls": []any{
						map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "now", "arguments": `{"broken`}},
					}},
					map[string]any{"role": "tool", "tool_call_id": "c1", "content": "error: invalid arguments"},
				},
				"tools": []any{map[string]any{"type": "function", "function": map[string]any{
					"name": "now", "description": "The time.", "parameters": map[string]any{"type": "object", "properties": map[string]any{}},
				}}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, reply{file: "text.json"}, reply{file: "stream_text.sse"})
			cfg := srv.config("", nil)
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			m := New(cfg)
			var err error
			if tt.stream {
				srv.replies = srv.replies[1:]
				_, err = m.Stream(context.Background(), &tt.req, nil)
			} else {
				_, err = m.Generate(context.Background(), &tt.req)
			}
			require.NoError(t, err, "call")
			body := srv.body(0)
			got := map[string]any{}
			for k := range tt.want {
				got[k] = body[k]
			}
			assert.Empty(t, cmp.Diff(tt.want, got), "request body mismatch (-want +got)")
		})
	}
}

// TestOpenAPIGenerateReplies maps recorded responses to replies.
func TestOpenAPIGenerateReplies(t *testing.T) {
	tests := []struct {
		name  string
		file  string
		model string
		want  llm.Reply
	}{
		{
			name: "plain text",
			file: "text.json",
			want: llm.Reply{
				Message:      defs.Message{Role: defs.RoleAssistant, Content: "Paris."},
				Usage:        llm.Usage{InputTokens: 19, OutputTokens: 2},
				FinishReason: llm.FinishStop,
				ID:           "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
			},
		},
		{
			name: "several tool calls in one reply",
			file: "tool_calls.json",
			want: llm.Reply{
				Message: defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{
					{ID: "call_8GWmYPbZ5nH1Qm6c4Xq2vT1k", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris","unit":"celsius"}`)},
					{ID: "call_Jm3B0s9Vq4aR7eLk2WnXc5Zt", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Tokyo","unit":"celsius"}`)},
					{ID: "call_Qp7s2Lm9Xk4Tz1Vb8Nc3Rd6F", Name: "get_time", Arguments: json.RawMessage(`{"tz":"Asia/Tokyo"}`)},
				}},
				Usage:        llm.Usage{InputTokens: 112, OutputTokens: 71},
				FinishReason: llm.FinishToolCalls,
				ID:           "chatcmpl-BHjCw9t2EBpWqLVSMAtBSPD1gQ3Ms",
			},
		},
		{
			name:  "cached and reasoning tokens with reasoning_content",
			file:  "reasoning_usage.json",
			model: "o3-mini",
			want: llm.Reply{
				Message:      defs.Message{Role: defs.RoleAssistant, Content: "42.", Reasoning: "The user asks for the answer; it is 42."},
				Usage:        llm.Usage{InputTokens: 2048, OutputTokens: 512, CachedTokens: 1536, ReasoningTokens: 448},
				FinishReason: llm.FinishStop,
				ID:           "chatcmpl-BKq8PZ4mF1dJ0aQ2z6Yt5Ww3Rr7Ux",
			},
		},
		{
			name:  "Ollama reasoning field",
			file:  "ollama_reasoning.json",
			model: "qwen3:4b",
			want: llm.Reply{
				Message:      defs.Message{Role: defs.RoleAssistant, Content: "Paris.", Reasoning: "The capital of France is Paris."},
				Usage:        llm.Usage{InputTokens: 24, OutputTokens: 31},
				FinishReason: llm.FinishStop,
				ID:           "chatcmpl-417",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, reply{file: tt.file})
			m := New(srv.config(tt.model, nil))
			got, err := m.Generate(context.Background(), &llm.Request{
				System:   "You are terse.",
				Messages: []defs.Message{defs.UserMessage("question")},
				Tools:    []llm.ToolSpec{weatherTool},
			})
			require.NoError(t, err, "Generate")
			assert.Empty(t, cmp.Diff(&tt.want, got), "reply mismatch (-want +got)")
			auth := srv.headers[0].Get("Authorization")
			assert.Equal(t, "Bearer sk-test", auth, "Authorization = %q, want the bearer key", auth)
		})
	}
}

// TestOpenAPIGenerateNoKey checks that no Authorization header is sent
// when no key is configured, as for Ollama.
func TestOpenAPIGenerateNoKey(t *testing.T) {
	srv := newFakeServer(t, reply{file: "text.json"})
	cfg := srv.config("llama3.2", nil)
	cfg.APIKey = ""
	_, err := New(cfg).Generate(context.Background(), &llm.Request{Messages: []defs.Message{defs.UserMessage("hi")}})
	require.NoError(t, err, "Generate")
	auth, ok := srv.headers[0]["Authorization"]
	assert.False(t, ok, "Authorization header sent without a key: %q", auth)
}
