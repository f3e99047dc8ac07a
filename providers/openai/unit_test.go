package openai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
)

func TestIsReasoningModel(t *testing.T) {
	for name, want := range map[string]bool{
		"o1": true, "o1-mini": true, "o3-mini": true, "o4-mini-2025-04-16": true,
		"gpt-5": true, "gpt-5-mini": true, "openai/o3": true, "openai/gpt-5-nano": true, "GPT-5": true,
		"gpt-4o": false, "gpt-4.1-mini": false, "llama3.2": false, "qwen3:4b": false, "deepseek-reasoner": false, "": false,
	} {
		got := isReasoningModel(name)
		assert.Equal(t, want, got, "isReasoningModel(%q) = %t, want %t", name, got, want)
	}
}

func TestConfigFromEnv(t *testing.T) {
	t.Setenv(EnvAPIKey, "")
	t.Setenv(EnvBaseURL, "http://localhost:11434/v1")
	t.Setenv(EnvModel, "qwen3:4b")
	want := Config{BaseURL: "http://localhost:11434/v1", Model: "qwen3:4b"}
	assert.Empty(t, cmp.Diff(want, ConfigFromEnv(), cmp.Comparer(func(a, b *rand.Rand) bool { return a == b })), "ConfigFromEnv mismatch (-want +got)")
	got := FromEnv().Name()
	assert.Equal(t, "qwen3:4b", got, "FromEnv().Name() = %q", got)
}

func TestConfigDefaults(t *testing.T) {
	c := Config{}.withDefaults()
	assert.Equal(t, DefaultBaseURL, c.BaseURL, "defaults not applied: BaseURL")
	assert.Equal(t, DefaultModel, c.Model, "defaults not applied: Model")
	assert.Equal(t, DefaultMaxRetries, c.MaxRetries, "defaults not applied: MaxRetries")
	assert.Equal(t, DefaultRetryBaseDelay, c.RetryBaseDelay, "defaults not applied: RetryBaseDelay")
	assert.Equal(t, DefaultRetryMaxDelay, c.RetryMaxDelay, "defaults not applied: RetryMaxDelay")
	assert.NotNil(t, c.HTTPClient, "defaults not applied: HTTPClient")
	assert.NotNil(t, c.Sleep, "defaults not applied: Sleep")
	none := (Config{MaxRetries: -1}).withDefaults()
	assert.Equal(t, 0, none.MaxRetries, "MaxRetries -1 gives %d retries, want 0", none.MaxRetries)
}

func TestBackoff(t *testing.T) {
	m := New(Config{RetryBaseDelay: 100 * time.Millisecond, RetryMaxDelay: time.Second, Rand: rand.New(rand.NewPCG(7, 7))})
	for n, hi := range []time.Duration{100, 200, 400, 800, 1000, 1000, 1000} {
		hi *= time.Millisecond
		d := m.retry.Backoff(n)
		assert.LessOrEqual(t, d, hi, "backoff(%d) = %v, want in [%v, %v]", n, d, hi*3/4, hi)
		assert.GreaterOrEqual(t, d, hi*3/4, "backoff(%d) = %v, want in [%v, %v]", n, d, hi*3/4, hi)
	}
	// The same seed gives the same delays.
	a := New(Config{Rand: rand.New(rand.NewPCG(1, 1))})
	b := New(Config{Rand: rand.New(rand.NewPCG(1, 1))})
	for n := range 5 {
		assert.Equal(t, a.retry.Backoff(n), b.retry.Backoff(n), "backoff(%d) differs with the same seed", n)
	}
}

func TestClassify(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name      string
		ctx       context.Context
		err       error
		retryable bool
		tooLong   bool
		status    int
		reason    string // why, where the case is not obvious
	}{
		{name: "connection refused", err: &net.OpError{Op: "dial", Err: errors.New("connection refused")}, retryable: true},
		{name: "unexpected EOF", err: fmt.Errorf("reading: %w", io.ErrUnexpectedEOF), retryable: true},
		{name: "stream cut", err: ErrStreamCut, retryable: true},
		{name: "plain error", err: errors.New("boom")},
		{name: "canceled context", ctx: canceled, err: errors.New("read on closed body"),
			reason: "an error after the context ended is the context's doing, whatever it says: not retried"},
		{name: "stream error event, server_error", err: fmt.Errorf("error, %w", &sdk.APIError{Type: "server_error", Message: "oops"}), retryable: true, status: 500,
			reason: "an error event in a stream has no HTTP status: its type decides, and names the status OpenAI answers it with"},
		{name: "stream error event, invalid request", err: fmt.Errorf("error, %w", &sdk.APIError{Type: "invalid_request_error", Message: "bad"})},
		{name: "llama.cpp context size", err: &sdk.APIError{HTTPStatusCode: 400, Type: "exceed_context_size_error", Message: "the request exceeds the available context size"}, tooLong: true, status: 400,
			reason: "llama.cpp names a too-long request with its own type, not OpenAI's code"},
		{name: "numeric code", err: &sdk.APIError{HTTPStatusCode: 503, Code: 503, Message: "overloaded"}, retryable: true, status: 503},
		{name: "429 mentioning tokens is not too long", err: &sdk.APIError{HTTPStatusCode: 429, Message: "too many tokens per minute", Code: "rate_limit_exceeded"}, retryable: true, status: 429,
			reason: "a rate limit on tokens per minute is not a context overflow: compacting would not help"},
		{name: "SDK validation", err: sdk.ErrReasoningModelMaxTokensDeprecated,
			reason: "the SDK refused the request before sending it: the same request would fail again"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.reason != "" {
				t.Cleanup(func() {
					if t.Failed() {
						t.Logf("why: %s", tt.reason)
					}
				})
			}
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			me := classify(ctx, tt.err)
			assert.Equal(t, tt.retryable, me.Retryable, "classify = %+v: Retryable", me)
			assert.Equal(t, tt.tooLong, me.ContextTooLong, "classify = %+v: ContextTooLong", me)
			assert.Equal(t, tt.status, me.StatusCode, "classify = %+v: StatusCode", me)
			if tt.ctx == nil {
				assert.ErrorIs(t, me, tt.err, "ModelError does not unwrap to %v", tt.err)
			} else {
				assert.ErrorIs(t, me, context.Canceled, "ModelError %v does not unwrap to context.Canceled", me)
			}
		})
	}
}

// TestNetworkErrorRetried checks that a refused connection is retried and
// then reported as a retryable error.
func TestNetworkErrorRetried(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	var sleeps int
	m := New(Config{BaseURL: url, Sleep: func(context.Context, time.Duration) error { sleeps++; return nil }})
	_, err := m.Generate(context.Background(), &llm.Request{Messages: []defs.Message{defs.UserMessage("hi")}})
	require.True(t, llm.IsRetryable(err), "error = %v, want retryable", err)
	assert.Equal(t, DefaultMaxRetries, sleeps, "slept %d times, want %d", sleeps, DefaultMaxRetries)
}

// TestInvalidRequest checks errors found before anything is sent.
func TestInvalidRequest(t *testing.T) {
	m := New(Config{BaseURL: "http://127.0.0.1:1"})
	for name, req := range map[string]*llm.Request{
		"nil":                  nil,
		"unknown role":         {Messages: []defs.Message{{Role: "narrator", Content: "x"}}},
		"tool without call id": {Messages: []defs.Message{{Role: defs.RoleTool, Content: "x"}}},
	} {
		_, err := m.Generate(context.Background(), req)
		var me *llm.ModelError
		if assert.ErrorAs(t, err, &me, "%s: error = %v, want a non-retryable *llm.ModelError", name, err) {
			assert.False(t, me.Retryable, "%s: error = %v, want a non-retryable *llm.ModelError", name, err)
		}
	}
}

// TestOpenAPIConcurrent runs calls in parallel on one Model (run with
// -race).
func TestOpenAPIConcurrent(t *testing.T) {
	srv := newFakeServer(t, reply{file: "text.json"})
	cfg := srv.config("gpt-4.1", nil)
	cfg.Temperature = ptr(0.0)
	cfg.Rand = rand.New(rand.NewPCG(3, 4))
	m := New(cfg)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			req := &llm.Request{Messages: []defs.Message{defs.UserMessage(fmt.Sprint("question ", i))}}
			reply, err := m.Generate(context.Background(), req)
			// wg.Go's goroutine: assert only, never require.
			if assert.NoError(t, err, "Generate %d", i) {
				assert.Equal(t, "Paris.", reply.Message.Content, "Generate %d = %+v", i, reply)
			}
			m.retry.Backoff(i)
		})
	}
	wg.Wait()
	assert.Equal(t, 8, srv.hits(), "server hit %d times, want 8", srv.hits())
}
