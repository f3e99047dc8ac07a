package anthropic_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/providers/anthropic"
)

var hello = &llm.Request{Messages: []defs.Message{defs.UserMessage("hi")}}

// TestErrors runs each failure the API answers, streamed and not: the
// status is kept whatever the body, retryable ones are retried (the
// attempts the server saw are counted) honouring retry-after, and a
// context-window error is ContextTooLong and not retried.
func TestErrors(t *testing.T) {
	tooLong := apiError(400, "invalid_request_error", "prompt is too long: 201234 tokens > 200000 maximum")
	for _, tc := range []struct {
		name     string
		answers  []answer
		stream   bool
		status   int // of the error; 0: the call succeeds
		retry    bool
		tooLong  bool
		attempts int
		slept    []time.Duration // nil: not checked
		msg      string
	}{
		{name: "400 context too long", answers: []answer{tooLong}, status: 400, tooLong: true, attempts: 1, msg: "prompt is too long"},
		{name: "400 context too long, streamed", answers: []answer{tooLong}, stream: true, status: 400, tooLong: true, attempts: 1},
		{name: "401", answers: []answer{apiError(401, "authentication_error", "invalid x-api-key")}, status: 401, attempts: 1, msg: "authentication_error: invalid x-api-key"},
		{name: "429 with retry-after", answers: []answer{
			withHeader(apiError(429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"), "retry-after", "7"),
			ok(t, "text.json")}, attempts: 2, slept: []time.Duration{7 * time.Second}},
		{name: "429 with retry-after-ms, streamed", answers: []answer{
			withHeader(apiError(429, "rate_limit_error", "slow down"), "retry-after-ms", "1500"),
			ok(t, "stream_text.sse")}, stream: true, attempts: 2, slept: []time.Duration{1500 * time.Millisecond}},
		{name: "429 asking longer than RetryMaxDelay", answers: []answer{
			withHeader(apiError(429, "rate_limit_error", "slow down"), "retry-after", "3600")}, status: 429, retry: true, attempts: 1, msg: "more than RetryMaxDelay"},
		{name: "529 overloaded, retried", answers: []answer{apiError(529, "overloaded_error", "Overloaded"), ok(t, "text.json")}, attempts: 2},
		{name: "529 overloaded every time", answers: []answer{apiError(529, "overloaded_error", "Overloaded")}, status: 529, retry: true, attempts: 3, msg: "overloaded_error: Overloaded"},
		{name: "overloaded error event in a stream", answers: []answer{ok(t, "stream_overloaded.sse"), ok(t, "stream_text.sse")}, stream: true, attempts: 2},
		{name: "overloaded error event every time", answers: []answer{ok(t, "stream_overloaded.sse")}, stream: true, status: 529, retry: true, attempts: 3},
		{name: "500", answers: []answer{apiError(500, "api_error", "Internal server error")}, status: 500, retry: true, attempts: 3},
		{name: "500, x-should-retry false", answers: []answer{withHeader(apiError(500, "api_error", "no"), "x-should-retry", "false")}, status: 500, attempts: 1},
		{name: "502 HTML from a proxy", answers: []answer{{status: 502, header: map[string]string{"Content-Type": "text/html"}, body: "<html><body>Bad Gateway</body></html>"}}, status: 502, retry: true, attempts: 3, msg: "Bad Gateway"},
		{name: "503 empty body", answers: []answer{{status: 503}}, status: 503, retry: true, attempts: 3},
		{name: "404 odd JSON", answers: []answer{{status: 404, body: `{"error":"not here"}`}}, status: 404, attempts: 1},
		{name: "stream cut before message_stop", answers: []answer{ok(t, "stream_cut.sse")}, stream: true, retry: true, attempts: 3, msg: "message_stop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, tc.answers...)
			var slept []time.Duration
			m := srv.model(anthropic.Config{}, &slept)
			var err error
			if tc.stream {
				_, err = m.Stream(context.Background(), hello, nil)
			} else {
				_, err = m.Generate(context.Background(), hello)
			}
			assert.Equal(t, tc.attempts, srv.attempts(), "attempts the server saw")
			if tc.slept != nil {
				assert.Equal(t, tc.slept, slept, "delays between attempts")
			}
			if tc.status == 0 && !tc.retry {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			var me *llm.ModelError
			require.ErrorAs(t, err, &me)
			assert.Equal(t, tc.status, me.StatusCode, "StatusCode")
			assert.Equal(t, tc.retry, me.Retryable, "Retryable")
			assert.Equal(t, tc.tooLong, me.ContextTooLong, "ContextTooLong")
			if tc.msg != "" {
				assert.ErrorContains(t, err, tc.msg)
			}
			if tc.status != 0 && !strings.Contains(tc.name, "HTML") && !strings.Contains(tc.name, "empty") && !strings.Contains(tc.name, "odd") {
				var ae *sdk.Error
				assert.ErrorAs(t, err, &ae, "the SDK's error stays reachable")
			}
			if strings.Contains(tc.name, "cut") {
				assert.ErrorIs(t, err, anthropic.ErrStreamCut)
			}
		})
	}
}

func withHeader(a answer, k, v string) answer {
	a.header = map[string]string{k: v}
	return a
}

// TestBackoff checks the delays without retry-after: doubling from
// RetryBaseDelay, capped at RetryMaxDelay, minus at most a quarter.
func TestBackoff(t *testing.T) {
	srv := newServer(t, apiError(500, "api_error", "boom"))
	var slept []time.Duration
	m := srv.model(anthropic.Config{MaxRetries: 4, RetryBaseDelay: time.Second, RetryMaxDelay: 3 * time.Second}, &slept)
	_, err := m.Generate(context.Background(), hello)
	require.Error(t, err)
	assert.Equal(t, 5, srv.attempts(), "attempts")
	require.Len(t, slept, 4)
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second} {
		assert.LessOrEqual(t, slept[i], want, "delay %d", i)
		assert.GreaterOrEqual(t, slept[i], want*3/4, "delay %d", i)
	}
}

func TestNoRetries(t *testing.T) {
	srv := newServer(t, apiError(529, "overloaded_error", "Overloaded"))
	_, err := srv.model(anthropic.Config{MaxRetries: -1}, nil).Generate(context.Background(), hello)
	assert.True(t, llm.IsRetryable(err), "the error is still retryable for the caller")
	assert.Equal(t, 1, srv.attempts(), "MaxRetries -1: one attempt")
}

// TestStreamNotRetriedAfterDelta: a stream that fails after a delta
// reached the caller is not sent again.
func TestStreamNotRetriedAfterDelta(t *testing.T) {
	body := strings.Replace(fixture(t, "stream_text.sse"), "event: message_stop\ndata: {\"type\":\"message_stop\"}\n", "", 1)
	srv := newServer(t, answer{status: 200, body: body, sse: true})
	var got string
	_, err := srv.model(anthropic.Config{}, nil).Stream(context.Background(), hello, func(d llm.Delta) { got += d.Content })
	assert.ErrorIs(t, err, anthropic.ErrStreamCut)
	assert.Equal(t, "Paris.", got, "the deltas delivered")
	assert.Equal(t, 1, srv.attempts(), "attempts")
}

func TestContextCanceled(t *testing.T) {
	srv := newServer(t, apiError(529, "overloaded_error", "Overloaded"))
	ctx, cancel := context.WithCancel(context.Background())
	m := srv.model(anthropic.Config{}, nil)
	cancel()
	_, err := m.Generate(ctx, hello)
	assert.ErrorIs(t, err, context.Canceled)
	assert.False(t, llm.IsRetryable(err), "a canceled call is not retryable")
}

// TestReplyTooLarge bounds the body, streamed or not.
func TestReplyTooLarge(t *testing.T) {
	for _, name := range []string{"text.json", "stream_text.sse"} {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t, ok(t, name))
			m := srv.model(anthropic.Config{MaxReplyBytes: 100}, nil)
			var err error
			if strings.HasSuffix(name, ".sse") {
				_, err = m.Stream(context.Background(), hello, nil)
			} else {
				_, err = m.Generate(context.Background(), hello)
			}
			var tl *anthropic.ReplyTooLargeError
			require.ErrorAs(t, err, &tl)
			assert.Equal(t, int64(100), tl.Limit)
			assert.Equal(t, strings.HasSuffix(name, ".sse"), tl.Streamed, "Streamed")
			assert.False(t, llm.IsRetryable(err), "not retried")
			assert.Equal(t, 1, srv.attempts(), "attempts")
		})
	}
}

// TestKeyRedacted: a server that echoes the key in its error body (as a
// misconfigured proxy does) leaves no trace of it in the error, its
// message, the SDK's error and the request it keeps, nor in the printed
// and logged Config and Model.
func TestKeyRedacted(t *testing.T) {
	echo := apiError(401, "authentication_error", "invalid key "+testKey)
	echo.body = strings.Replace(echo.body, `"request_id"`, `"echo":"Bearer `+testKey+`","request_id"`, 1)
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			srv := newServer(t, echo)
			m := srv.model(anthropic.Config{}, nil)
			var err error
			if stream {
				_, err = m.Stream(context.Background(), hello, nil)
			} else {
				_, err = m.Generate(context.Background(), hello)
			}
			require.Error(t, err)
			assert.NotContains(t, err.Error(), testKey)
			assert.Contains(t, err.Error(), anthropic.Redacted)
			assert.NotContains(t, fmt.Sprintf("%+v %#v", err, err), testKey)
			var me *llm.ModelError
			require.ErrorAs(t, err, &me)
			assert.Equal(t, 401, me.StatusCode)
			var ae *sdk.Error
			require.ErrorAs(t, err, &ae)
			assert.NotContains(t, ae.Error(), testKey)
			assert.NotContains(t, ae.RawJSON(), testKey)
			assert.NotContains(t, ae.Message, testKey)
			assert.Equal(t, 401, ae.StatusCode, "the SDK error keeps its status")
			require.NotNil(t, ae.Request)
			assert.NotContains(t, fmt.Sprint(ae.Request.Header), testKey, "headers of the kept request")
			assert.NotContains(t, string(ae.DumpRequest(false)), testKey)
		})
	}

	cfg := anthropic.Config{APIKey: testKey, Model: "claude-sonnet-4-5"}
	m := anthropic.New(cfg)
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), fmt.Sprintf("%s", cfg), fmt.Sprint(m), fmt.Sprintf("%#v", m), fmt.Sprintf("%+v", m)} {
		assert.NotContains(t, s, testKey)
		assert.Contains(t, s, anthropic.Redacted)
	}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("model", "config", cfg, "model", m)
	assert.NotContains(t, buf.String(), testKey, "slog output")
	assert.Contains(t, buf.String(), anthropic.Redacted)
}

func TestFromEnv(t *testing.T) {
	t.Setenv(anthropic.EnvAPIKey, testKey)
	t.Setenv(anthropic.EnvBaseURL, "http://localhost:1")
	t.Setenv(anthropic.EnvModel, "claude-haiku-4-5")
	cfg := anthropic.ConfigFromEnv()
	assert.Equal(t, anthropic.Config{APIKey: testKey, BaseURL: "http://localhost:1", Model: "claude-haiku-4-5"}, cfg)
	m := anthropic.FromEnv()
	assert.Equal(t, "claude-haiku-4-5", m.ModelName())
	assert.Equal(t, "", m.ProviderName(), "not api.anthropic.com")
	assert.Equal(t, "anthropic", anthropic.New(anthropic.Config{}).ProviderName())
	assert.Equal(t, anthropic.DefaultModel, anthropic.New(anthropic.Config{}).ModelName())
}
