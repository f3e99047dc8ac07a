package openai

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
)

// The tests of this file run in testing/synctest bubbles: the waits take
// no real time, and their lengths are exact. The model talks to an
// in-memory transport, as sockets cannot be used in a bubble.

// TestDefaultSleep: the Sleep used when Config.Sleep is nil waits d, or
// until the context ends.
func TestDefaultSleep(t *testing.T) {
	tests := []struct {
		name    string
		d       time.Duration
		timeout time.Duration // of the context; 0 for none
		want    time.Duration // time waited
		wantErr error
	}{
		{"waits d", 90 * time.Second, 0, 90 * time.Second, nil},
		{"ends with the context", 90 * time.Second, 30 * time.Second, 30 * time.Second, context.DeadlineExceeded},
		{"no wait for d ≤ 0", -time.Second, 0, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				if tt.timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.timeout)
					defer cancel()
				}
				start := time.Now()
				err := sleep(ctx, tt.d)
				got := time.Since(start)
				assert.Equal(t, tt.want, got, "sleep(%v) = %v after %v, want %v after %v", tt.d, err, got, tt.wantErr, tt.want)
				assert.ErrorIs(t, err, tt.wantErr, "sleep(%v) = %v after %v, want %v after %v", tt.d, err, got, tt.wantErr, tt.want)
			})
		})
	}
}

// memoryTransport answers requests with its replies in order, and records
// when each request arrived.
type memoryTransport struct {
	mu      sync.Mutex
	replies []memoryReply
	at      []time.Time
}

type memoryReply struct {
	status int
	header http.Header
	body   string
}

func (m *memoryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		_ = req.Body.Close()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.at = append(m.at, time.Now())
	if len(m.replies) == 0 {
		return nil, errors.New("memoryTransport: no reply left")
	}
	r := m.replies[0]
	m.replies = m.replies[1:]
	h := r.header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set("Content-Type", "application/json")
	return &http.Response{
		StatusCode: r.status, Status: http.StatusText(r.status), Header: h, Request: req,
		Body: io.NopCloser(strings.NewReader(r.body)), ContentLength: int64(len(r.body)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
	}, nil
}

// gaps returns the time between consecutive requests.
func (m *memoryTransport) gaps() []time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []time.Duration
	for i := 1; i < len(m.at); i++ {
		out = append(out, m.at[i].Sub(m.at[i-1]))
	}
	return out
}

const (
	okBody       = `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-4.1","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`
	overloaded   = `{"error":{"message":"overloaded","type":"server_error"}}`
	rateLimitMsg = `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`
)

func memoryConfig(tr *memoryTransport) Config {
	return Config{
		APIKey: "sk-test", BaseURL: "http://model.test/v1", Model: "gpt-4.1",
		HTTPClient: &http.Client{Transport: tr}, Rand: rand.New(rand.NewPCG(3, 3)),
		RetryBaseDelay: time.Second, RetryMaxDelay: time.Minute,
	}
}

// TestRetriesWaitBackoffAndRetryAfter: with the default Sleep, a retry
// waits the backoff, or the server's Retry-After when it sends one.
func TestRetriesWaitBackoffAndRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &memoryTransport{replies: []memoryReply{
			{status: 503, body: overloaded},
			{status: 429, header: http.Header{"Retry-After": {"7"}}, body: rateLimitMsg},
			{status: 200, body: okBody},
		}}
		cfg := memoryConfig(tr)
		twin := New(memoryConfig(&memoryTransport{})) // same seed: the same jitter
		reply, err := New(cfg).Generate(context.Background(), &llm.Request{Messages: []defs.Message{defs.UserMessage("hi")}})
		require.NoError(t, err)
		assert.Equal(t, "hi", reply.Message.Content, "reply %q, want hi", reply.Message.Content)
		want := []time.Duration{twin.retry.Backoff(0), 7 * time.Second}
		assert.Empty(t, cmp.Diff(want, tr.gaps()), "waits between attempts mismatch (-want +got)")
	})
}

// TestRetryAfterPastDeadlineIsNotWaited: a retry that could not start
// before the context's deadline is not waited for.
func TestRetryAfterPastDeadlineIsNotWaited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &memoryTransport{replies: []memoryReply{
			{status: 429, header: http.Header{"Retry-After": {"10"}}, body: rateLimitMsg},
			{status: 200, body: okBody},
		}}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		_, err := New(memoryConfig(tr)).Generate(ctx, &llm.Request{Messages: []defs.Message{defs.UserMessage("hi")}})
		var me *llm.ModelError
		require.ErrorAs(t, err, &me, "err = %v, want the retryable 429", err)
		require.Equal(t, 429, me.StatusCode, "err = %v, want the retryable 429", err)
		require.True(t, me.Retryable, "err = %v, want the retryable 429", err)
		d := time.Since(start)
		assert.Zero(t, d, "Generate returned after %v, want at once", d)
		assert.Len(t, tr.at, 1, "attempts")
	})
}
