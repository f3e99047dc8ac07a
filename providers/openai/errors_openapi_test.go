package openai

import (
	"context"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/llm"
)

func errorBody(message, typ, code string) string {
	c := "null"
	if code != "" {
		c = `"` + code + `"`
	}
	return `{"error":{"message":"` + message + `","type":"` + typ + `","param":null,"code":` + c + `}}`
}

// TestOpenAPIErrors checks how HTTP failures become *llm.ModelError,
// for Generate and Stream.
func TestOpenAPIErrors(t *testing.T) {
	tests := []struct {
		name     string
		reply    reply
		want     llm.ModelError // Err is not compared
		wantHits int
		sdkErr   string // "api" or "request": the go-openai type errors.As must find
	}{
		{
			name:     "400 context_length_exceeded",
			reply:    reply{status: 400, body: errorBody("This model's maximum context length is 128000 tokens. However, your messages resulted in 130012 tokens.", "invalid_request_error", "context_length_exceeded")},
			want:     llm.ModelError{StatusCode: 400, ContextTooLong: true, Message: "This model's maximum context length is 128000 tokens. However, your messages resulted in 130012 tokens."},
			wantHits: 1, sdkErr: "api",
		},
		{
			name:     "400 vLLM context message without code",
			reply:    reply{status: 400, body: `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.","type":"BadRequestError","param":null,"code":400}`},
			want:     llm.ModelError{StatusCode: 400, Message: "{\"object\":\"error\",\"message\":\"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.\",\"type\":\"BadRequestError\",\"param\":null,\"code\":400}", ContextTooLong: true},
			wantHits: 1, sdkErr: "request",
		},
		{
			name:     "400 invalid request",
			reply:    reply{status: 400, body: errorBody("Invalid value for 'tool_choice'.", "invalid_request_error", "invalid_value")},
			want:     llm.ModelError{StatusCode: 400, Message: "Invalid value for 'tool_choice'."},
			wantHits: 1, sdkErr: "api",
		},
		{
			name:  "401 bad key",
			reply: reply{status: 401, body: errorBody("Incorrect API key provided: sk-test.", "invalid_request_error", "invalid_api_key")},
			// The key the server echoed is redacted (issue 8 item 7).
			want:     llm.ModelError{StatusCode: 401, Message: "Incorrect API key provided: [redacted]."},
			wantHits: 1, sdkErr: "api",
		},
		{
			name:     "429 insufficient_quota is not retried",
			reply:    reply{status: 429, body: errorBody("You exceeded your current quota.", "insufficient_quota", "insufficient_quota")},
			want:     llm.ModelError{StatusCode: 429, Message: "You exceeded your current quota."},
			wantHits: 1, sdkErr: "api",
		},
		{
			name:     "429 rate limit retried until MaxRetries",
			reply:    reply{status: 429, body: errorBody("Rate limit reached for gpt-4.1 on tokens per min (TPM).", "tokens", "rate_limit_exceeded")},
			want:     llm.ModelError{StatusCode: 429, Retryable: true, Message: "Rate limit reached for gpt-4.1 on tokens per min (TPM)."},
			wantHits: 3, sdkErr: "api",
		},
		{
			name:     "502 HTML from a proxy",
			reply:    reply{status: 502, header: map[string]string{"Content-Type": "text/html"}, body: "<html>Bad Gateway</html>"},
			want:     llm.ModelError{StatusCode: 502, Retryable: true, Message: "Bad Gateway"},
			wantHits: 3, sdkErr: "request",
		},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			name := tt.name + "/generate"
			if stream {
				name = tt.name + "/stream"
			}
			t.Run(name, func(t *testing.T) {
				srv := newFakeServer(t, tt.reply)
				var sleeps []time.Duration
				m := New(srv.config("gpt-4.1", &sleeps))
				var err error
				if stream {
					_, err = m.Stream(context.Background(), userRequest("q"), nil)
				} else {
					_, err = m.Generate(context.Background(), userRequest("q"))
				}
				var me *llm.ModelError
				require.ErrorAs(t, err, &me, "error %v (%T) is not an *llm.ModelError", err, err)
				got := *me
				got.Err = nil
				assert.Empty(t, cmp.Diff(tt.want, got), "ModelError mismatch (-want +got)")
				assert.Equal(t, tt.wantHits, srv.hits(), "server hit %d times, want %d", srv.hits(), tt.wantHits)
				assert.Len(t, sleeps, tt.wantHits-1, "slept %d times, want %d", len(sleeps), tt.wantHits-1)
				switch tt.sdkErr {
				case "api":
					var apiErr *sdk.APIError
					if assert.ErrorAs(t, err, &apiErr, "errors.As(*openai.APIError) failed on %v", err) {
						assert.Equal(t, tt.want.StatusCode, apiErr.HTTPStatusCode, "*openai.APIError's HTTPStatusCode")
					}
				case "request":
					var reqErr *sdk.RequestError
					if assert.ErrorAs(t, err, &reqErr, "errors.As(*openai.RequestError) failed on %v", err) {
						assert.Equal(t, tt.want.StatusCode, reqErr.HTTPStatusCode, "*openai.RequestError's HTTPStatusCode")
					}
				}
			})
		}
	}
}

// TestOpenAPIRetry checks retries: backoff with deterministic jitter,
// Retry-After in seconds, as a date and in milliseconds, and a Retry-After
// too long to wait for.
func TestOpenAPIRetry(t *testing.T) {
	rateLimited := func(h map[string]string) reply {
		return reply{status: 429, header: h, body: errorBody("Rate limit reached.", "requests", "rate_limit_exceeded")}
	}
	serverError := reply{status: 500, body: errorBody("The server had an error while processing your request.", "server_error", "")}
	httpDate := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)

	tests := []struct {
		name       string
		replies    []reply
		maxDelay   time.Duration
		wantSleeps []time.Duration // nil: only the count is checked
		nSleeps    int
		wantErr    bool
	}{
		{name: "500 then success", replies: []reply{serverError, {}}, nSleeps: 1},
		{name: "500 twice then success", replies: []reply{serverError, serverError, {}}, nSleeps: 2},
		{name: "429 Retry-After seconds", replies: []reply{rateLimited(map[string]string{"Retry-After": "2"}), {}}, wantSleeps: []time.Duration{2 * time.Second}},
		{name: "429 retry-after-ms", replies: []reply{rateLimited(map[string]string{"Retry-After-Ms": "1500", "Retry-After": "2"}), {}}, wantSleeps: []time.Duration{1500 * time.Millisecond}},
		{name: "429 Retry-After HTTP date", replies: []reply{rateLimited(map[string]string{"Retry-After": httpDate}), {}}, maxDelay: 2 * time.Minute, nSleeps: 1},
		{name: "429 Retry-After longer than RetryMaxDelay", replies: []reply{rateLimited(map[string]string{"Retry-After": "3600"}), {}}, wantSleeps: []time.Duration{}, wantErr: true},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			name := tt.name + "/generate"
			if stream {
				name = tt.name + "/stream"
			}
			t.Run(name, func(t *testing.T) {
				replies := append([]reply(nil), tt.replies...)
				last := &replies[len(replies)-1]
				if last.status == 0 {
					last.file = "text.json"
					if stream {
						last.file = "stream_text.sse"
					}
				}
				srv := newFakeServer(t, replies...)
				sleeps := []time.Duration{}
				cfg := srv.config("gpt-4.1", &sleeps)
				cfg.Rand = rand.New(rand.NewPCG(1, 2))
				cfg.RetryMaxDelay = tt.maxDelay
				m := New(cfg)
				var got *llm.Reply
				var err error
				if stream {
					got, err = m.Stream(context.Background(), userRequest("q"), nil)
				} else {
					got, err = m.Generate(context.Background(), userRequest("q"))
				}
				if tt.wantErr {
					require.True(t, llm.IsRetryable(err), "error = %v, want a retryable error", err)
				} else {
					require.NoError(t, err, "call failed after retries")
					require.NotNil(t, got, "call failed after retries: no reply")
				}
				if tt.wantSleeps != nil {
					assert.Empty(t, cmp.Diff(tt.wantSleeps, sleeps), "sleeps mismatch (-want +got)")
				} else {
					assert.Len(t, sleeps, tt.nSleeps, "slept %v, want %d sleeps", sleeps, tt.nSleeps)
				}
				for i, d := range sleeps {
					if tt.wantSleeps == nil && tt.maxDelay == 0 {
						// Backoff: base·2ⁱ minus at most 25% jitter.
						hi := DefaultRetryBaseDelay << i
						assert.LessOrEqual(t, d, hi, "sleep %d = %v, want in [%v, %v]", i, d, hi*3/4, hi)
						assert.GreaterOrEqual(t, d, hi*3/4, "sleep %d = %v, want in [%v, %v]", i, d, hi*3/4, hi)
					}
				}
			})
		}
	}
}

// TestOpenAPIRetryWaitCanceled cancels the context while waiting to retry
// and checks that the error reaches both the cancellation and the server's
// error; a Retry-After too long to honour is named in the error.
func TestOpenAPIRetryWaitCanceled(t *testing.T) {
	srv := newFakeServer(t, reply{status: 503, body: errorBody("Overloaded.", "server_error", "")})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := srv.config("gpt-4.1", nil)
	cfg.Sleep = func(ctx context.Context, d time.Duration) error { cancel(); return ctx.Err() }
	_, err := New(cfg).Generate(ctx, userRequest("q"))
	var apiErr *sdk.APIError
	assert.ErrorIs(t, err, context.Canceled, "error = %v, want a non-retryable error wrapping context.Canceled and the *openai.APIError", err)
	assert.ErrorAs(t, err, &apiErr, "error = %v, want a non-retryable error wrapping context.Canceled and the *openai.APIError", err)
	assert.False(t, llm.IsRetryable(err), "error = %v, want a non-retryable error wrapping context.Canceled and the *openai.APIError", err)
	assert.Equal(t, 1, srv.hits(), "server hit %d times, want 1", srv.hits())

	srv = newFakeServer(t, reply{status: 429, header: map[string]string{"Retry-After": "120"}, body: errorBody("Slow down.", "requests", "rate_limit_exceeded")})
	_, err = New(srv.config("gpt-4.1", nil)).Generate(context.Background(), userRequest("q"))
	var me *llm.ModelError
	if assert.ErrorAs(t, err, &me, "error = %v, want a retryable error naming the Retry-After", err) {
		assert.True(t, me.Retryable, "error = %v, want a retryable error naming the Retry-After", err)
		assert.Contains(t, me.Message, "retry after 2m0s", "error = %v, want a retryable error naming the Retry-After", err)
	}
}
