package openai_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/reprompt/reprompt/llm"
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

// TestTraceAndLogRedactTheKeyInReplies has a server echo the API key in a
// successful reply, in its text, its reasoning and a tool call's
// arguments, and a tool that returns it and fails with it, with content
// traced and everything logged: the key appears in no span (attributes,
// events, status) and no log record, while the run itself gets the reply
// as the server sent it (issue 23 item 8).
func TestTraceAndLogRedactTheKeyInReplies(t *testing.T) {
	const key = "sk-proj-echoed-0123456789abcdef"
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%t", stream), func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := calls.Add(1)
				body, err := io.ReadAll(r.Body)
				assert.NoError(t, err, "request body")
				streamed := strings.Contains(string(body), `"stream":true`)
				var chunks []string
				if n == 1 {
					chunks = []string{
						`{"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"The key is ` + key + `.","content":"Your key: ` + key + `"}}]}`,
						`{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"echo","arguments":"{\"text\":\"` + key + `\"}"}}]}}]}`,
						`{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"fail","arguments":"{\"text\":\"` + key + `\"}"}}]}}]}`,
						`{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":5,"completion_tokens":5,"total_tokens":10}}`,
					}
				} else {
					chunks = []string{
						`{"id":"c2","choices":[{"index":0,"delta":{"role":"assistant","content":"Done with ` + key + `"}}]}`,
						`{"id":"c2","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":5,"total_tokens":10}}`,
					}
				}
				if streamed {
					w.Header().Set("Content-Type", "text/event-stream")
					for _, c := range chunks {
						fmt.Fprintf(w, "data: %s\n\n", c)
					}
					fmt.Fprint(w, "data: [DONE]\n\n")
					return
				}
				w.Header().Set("Content-Type", "application/json")
				if n == 1 {
					fmt.Fprint(w, `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","reasoning_content":"The key is `+key+`.","content":"Your key: `+key+`","tool_calls":[`+
						`{"id":"call_1","type":"function","function":{"name":"echo","arguments":"{\"text\":\"`+key+`\"}"}},`+
						`{"id":"call_2","type":"function","function":{"name":"fail","arguments":"{\"text\":\"`+key+`\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":5,"completion_tokens":5,"total_tokens":10}}`)
					return
				}
				fmt.Fprint(w, `{"id":"c2","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Done with `+key+`"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":5,"total_tokens":10}}`)
			}))
			defer srv.Close()
			model := openai.New(openai.Config{APIKey: key, BaseURL: srv.URL + "/v1", Model: "gpt-x", MaxRetries: -1})

			exp := tracetest.NewInMemoryExporter()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
			defer func() { _ = tp.Shutdown(context.Background()) }()
			var logs bytes.Buffer
			cfg := runtime.Config{
				TracerProvider: tp, TraceContent: true,
				Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
			}
			if stream {
				cfg.OnDelta = func(llm.Delta) {}
			}
			type args struct {
				Text string `json:"text"`
			}
			var echoed string
			agent := func(p *prompt.Prompt) error {
				prompt.DefTool(p, "echo", "Echo.", func(_ context.Context, a args) (string, error) {
					echoed = a.Text
					return "echo: " + a.Text, nil
				})
				prompt.DefTool(p, "fail", "Fail.", func(_ context.Context, a args) (string, error) {
					return "", errors.New("refused " + a.Text)
				})
				p.User("hi")
				return nil
			}
			res, err := runtime.Run(context.Background(), model, agent, cfg)
			require.NoError(t, err)
			assert.Equal(t, "Done with "+key, res.Text, "the run gets the reply as the server sent it")
			assert.Equal(t, key, echoed, "the tool gets the arguments as the server sent them")

			var dump strings.Builder
			for _, s := range exp.GetSpans() {
				fmt.Fprintf(&dump, "%s %v %v %v\n", s.Name, s.Attributes, s.Events, s.Status)
			}
			assert.NotContains(t, dump.String(), key, "spans")
			assert.NotContains(t, logs.String(), key, "logs")
			for _, want := range []string{
				"gen_ai.output.messages", "Your key: [redacted]", "The key is [redacted].", // output text and reasoning
				`{"text":"[redacted]"}`, // tool arguments
				"echo: [redacted]",      // a tool result
				"refused [redacted]",    // a tool error
				"Done with [redacted]",  // the last reply
			} {
				assert.Contains(t, dump.String(), want, "what is traced, redacted")
			}
		})
	}
}
