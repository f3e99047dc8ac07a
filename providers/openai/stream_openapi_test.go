package openai

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
)

func userRequest(text string) *llm.Request {
	return &llm.Request{System: "You are terse.", Messages: []defs.Message{defs.UserMessage(text)}, Tools: []llm.ToolSpec{weatherTool}}
}

// TestOpenAPIStream assembles recorded streams and checks the deltas.
func TestOpenAPIStream(t *testing.T) {
	tests := []struct {
		name       string
		file       string
		omitUsage  bool
		want       llm.Reply
		wantDeltas []llm.Delta
	}{
		{
			name: "text with usage chunk",
			file: "stream_text.sse",
			want: llm.Reply{
				Message:      defs.Message{Role: defs.RoleAssistant, Content: "The capital is Paris."},
				Usage:        llm.Usage{InputTokens: 1200, OutputTokens: 7, CachedTokens: 1024},
				FinishReason: llm.FinishStop,
				ID:           "chatcmpl-BTx1",
			},
			wantDeltas: []llm.Delta{{Content: "The capital"}, {Content: " is Paris"}, {Content: "."}},
		},
		{
			name: "parallel tool calls split across chunks",
			file: "stream_parallel_tools.sse",
			want: llm.Reply{
				Message: defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{
					{ID: "call_PAR1s", Name: "get_weather", Arguments: json.RawMessage(`{"city": "Paris"}`)},
					{ID: "call_PAR2s", Name: "get_time", Arguments: json.RawMessage(`{"tz": "Europe/Paris"}`)},
				}},
				Usage:        llm.Usage{InputTokens: 140, OutputTokens: 48},
				FinishReason: llm.FinishToolCalls,
				ID:           "chatcmpl-BTx2",
			},
			wantDeltas: []llm.Delta{
				{ToolCall: &llm.ToolCallDelta{Index: 0, ID: "call_PAR1s", Name: "get_weather"}},
				{ToolCall: &llm.ToolCallDelta{Index: 0, Arguments: `{"ci`}},
				{ToolCall: &llm.ToolCallDelta{Index: 0, Arguments: `ty": "Par`}},
				{ToolCall: &llm.ToolCallDelta{Index: 1, ID: "call_PAR2s", Name: "get_time"}},
				{ToolCall: &llm.ToolCallDelta{Index: 0, Arguments: `is"}`}},
				{ToolCall: &llm.ToolCallDelta{Index: 1, Arguments: `{"tz":`}},
				{ToolCall: &llm.ToolCallDelta{Index: 1, Arguments: ` "Europe/Paris"}`}},
			},
		},
		{
			name:      "reasoning_content and no usage chunk",
			file:      "stream_reasoning.sse",
			omitUsage: true,
			want: llm.Reply{
				Message:      defs.Message{Role: defs.RoleAssistant, Content: "Paris.", Reasoning: "France's capital is Paris."},
				FinishReason: llm.FinishStop,
				ID:           "b1e0a9f6",
			},
			wantDeltas: []llm.Delta{{Reasoning: "France's capital"}, {Reasoning: " is Paris."}, {Content: "Paris."}},
		},
		{
			name: "Ollama reasoning field and whole tool call in one chunk",
			file: "stream_ollama_reasoning.sse",
			want: llm.Reply{
				Message: defs.Message{Role: defs.RoleAssistant, Reasoning: "Thinking hard.", ToolCalls: []defs.ToolCall{
					{ID: "call_l2g7y1qp", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
				}},
				Usage:        llm.Usage{InputTokens: 180, OutputTokens: 25},
				FinishReason: llm.FinishToolCalls,
				ID:           "chatcmpl-88",
			},
			wantDeltas: []llm.Delta{
				{Reasoning: "Thinking"}, {Reasoning: " hard."},
				{ToolCall: &llm.ToolCallDelta{Index: 0, ID: "call_l2g7y1qp", Name: "get_weather", Arguments: `{"city":"Paris"}`}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, reply{file: tt.file})
			cfg := srv.config("gpt-4.1", nil)
			cfg.OmitStreamUsage = tt.omitUsage
			var deltas []llm.Delta
			got, err := New(cfg).Stream(context.Background(), userRequest("q"), func(d llm.Delta) { deltas = append(deltas, d) })
			require.NoError(t, err, "Stream")
			assert.Empty(t, cmp.Diff(&tt.want, got), "reply mismatch (-want +got)")
			assert.Empty(t, cmp.Diff(tt.wantDeltas, deltas), "deltas mismatch (-want +got)")
			_, asked := srv.body(0)["stream_options"]
			assert.Equal(t, !tt.omitUsage, asked, "stream_options sent = %t, want %t", asked, !tt.omitUsage)
		})
	}
}

const textChunk = `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}`

// TestOpenAPIStreamCut checks streams that end before a finish_reason.
func TestOpenAPIStreamCut(t *testing.T) {
	tests := []struct {
		name      string
		first     reply
		wantHits  int
		wantErr   bool
		wantDelta int
		wantCut   bool // the error wraps ErrStreamCut
	}{
		// A delta was delivered: the error is retryable but not retried.
		{name: "clean end after a delta", first: reply{events: []string{textChunk}}, wantHits: 1, wantErr: true, wantDelta: 1, wantCut: true},
		{name: "dropped connection after a delta", first: reply{events: []string{textChunk}, drop: true}, wantHits: 1, wantErr: true, wantDelta: 1},
		// Nothing was delivered: the stream is retried and succeeds.
		{name: "dropped connection before any delta", first: reply{drop: true}, wantHits: 2, wantDelta: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, tt.first, reply{file: "stream_text.sse"})
			var sleeps []time.Duration
			var deltas int
			got, err := New(srv.config("gpt-4.1", &sleeps)).Stream(context.Background(), userRequest("q"), func(llm.Delta) { deltas++ })
			assert.Equal(t, tt.wantHits, srv.hits(), "server hit %d times, want %d", srv.hits(), tt.wantHits)
			assert.Equal(t, tt.wantDelta, deltas, "%d deltas, want %d", deltas, tt.wantDelta)
			if !tt.wantErr {
				require.NoError(t, err, "Stream: want the retried reply")
				require.Equal(t, "The capital is Paris.", got.Message.Content, "Stream = %+v; want the retried reply", got)
				return
			}
			var me *llm.ModelError
			require.ErrorAs(t, err, &me, "error %v (%T) is not an *llm.ModelError", err, err)
			assert.True(t, me.Retryable, "ModelError = %+v, want retryable with no status", me)
			assert.Zero(t, me.StatusCode, "ModelError = %+v, want retryable with no status", me)
			assert.Nil(t, got, "reply = %+v, want nil", got)
			if tt.wantCut {
				assert.ErrorIs(t, err, ErrStreamCut, "error %v does not wrap ErrStreamCut", err)
			}
		})
	}
}

// TestOpenAPIStreamCancel cancels the context while the server holds the
// stream open and checks that Stream returns promptly.
func TestOpenAPIStreamCancel(t *testing.T) {
	srv := newFakeServer(t, reply{events: []string{textChunk}, hang: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	_, err := New(srv.config("gpt-4.1", nil)).Stream(ctx, userRequest("q"), func(llm.Delta) { cancel() })
	elapsed := time.Since(start)
	assert.LessOrEqual(t, elapsed, 2*time.Second, "Stream returned after %v, want promptly", elapsed)
	assert.ErrorIs(t, err, context.Canceled, "error %v does not wrap context.Canceled", err)
	var me *llm.ModelError
	if assert.ErrorAs(t, err, &me, "error %#v, want a non-retryable *llm.ModelError", err) {
		assert.False(t, me.Retryable, "error %#v, want a non-retryable *llm.ModelError", err)
	}
	assert.Equal(t, 1, srv.hits(), "server hit %d times, want 1", srv.hits())
}

// TestOpenAPIStreamDeadline checks a deadline that expires mid-stream.
func TestOpenAPIStreamDeadline(t *testing.T) {
	srv := newFakeServer(t, reply{events: []string{textChunk}, hang: true})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := New(srv.config("gpt-4.1", nil)).Stream(ctx, userRequest("q"), nil)
	elapsed := time.Since(start)
	assert.LessOrEqual(t, elapsed, 2*time.Second, "Stream returned after %v, want promptly", elapsed)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "error %v does not wrap context.DeadlineExceeded", err)
}

// TestOpenAPIStreamErrorEvent checks an error sent inside a stream.
func TestOpenAPIStreamErrorEvent(t *testing.T) {
	srv := newFakeServer(t, reply{events: []string{`{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`}})
	cfg := srv.config("gpt-4.1", nil)
	cfg.MaxRetries = -1
	_, err := New(cfg).Stream(context.Background(), userRequest("q"), nil)
	var me *llm.ModelError
	require.ErrorAs(t, err, &me, "error = %#v, want a retryable ModelError with the server's message", err)
	require.True(t, me.Retryable, "error = %#v, want a retryable ModelError with the server's message", err)
	require.Contains(t, me.Message, "server had an error", "error = %#v, want a retryable ModelError with the server's message", err)
	var apiErr *sdk.APIError
	assert.ErrorAs(t, err, &apiErr, "errors.As(*openai.APIError) failed on %v", err)
}
