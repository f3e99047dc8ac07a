package openai_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/providers/openai"
	"github.com/reprompt/reprompt/runtime"
)

func TestModelAndProviderNames(t *testing.T) {
	m := openai.New(openai.Config{Model: "gpt-x"})
	assert.Equal(t, "gpt-x", m.ModelName())
	assert.Equal(t, "openai", m.ProviderName())
	local := openai.New(openai.Config{BaseURL: "http://localhost:11434/v1"})
	assert.Equal(t, openai.DefaultModel, local.ModelName())
	assert.Equal(t, "", local.ProviderName(), "another server speaking the protocol: unknown")
}

// TestTraceAndLogNeverShowTheAPIKey runs a model call that succeeds and one
// that fails, with message content traced and everything logged, and looks
// for the API key in every span and record.
func TestTraceAndLogNeverShowTheAPIKey(t *testing.T) {
	const key = "sk-test-0123456789abcdef"
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+key {
			http.Error(w, "no key", http.StatusBadRequest)
			return
		}
		calls++
		w.Header().Set("Content-Type", "application/json")
		if calls > 1 {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":{"message":"invalid api key","type":"invalid_request_error","code":"invalid_api_key"}}`)
			return
		}
		fmt.Fprint(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-x","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":2,"total_tokens":14}}`)
	}))
	defer srv.Close()
	model := openai.New(openai.Config{APIKey: key, BaseURL: srv.URL, Model: "gpt-x", MaxRetries: -1})

	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	var logs bytes.Buffer
	cfg := runtime.Config{
		TracerProvider: tp, TraceContent: true,
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	hi := func(p *prompt.Prompt) error { p.User("hi"); return nil }
	res, err := runtime.Run(context.Background(), model, hi, cfg)
	require.NoError(t, err)
	require.Equal(t, "hello", res.Text)
	_, err = runtime.Run(context.Background(), model, hi, cfg)
	require.Error(t, err)

	spans := exp.GetSpans()
	var dump strings.Builder
	var chats int
	for _, s := range spans {
		fmt.Fprintf(&dump, "%s %v %v %v\n", s.Name, s.Attributes, s.Events, s.Status)
		if s.Name == "chat gpt-x" {
			chats++
		}
	}
	assert.Equal(t, 2, chats, "model calls named by the adapter")
	assert.Contains(t, dump.String(), "chatcmpl-1", "the response id")
	assert.Contains(t, dump.String(), "invalid api key", "the failure")
	assert.Contains(t, logs.String(), "invalid api key")
	assert.NotContains(t, dump.String(), key)
	assert.NotContains(t, logs.String(), key)
}
