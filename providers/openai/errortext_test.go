package openai

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/llm"
)

// TestStreamErrorEventBareString sends, inside a 200 stream, an event whose
// data is a JSON string, as @dwmkerr/mock-llm does for an error scripted
// with a string body: it used to fail as "a stream event is not a chunk",
// status 0, not retried. It is an error event: its status is the one its
// text names, or 502 when it names none, and it is retried like a 5xx
// (issue 23 item 15).
func TestStreamErrorEventBareString(t *testing.T) {
	tests := []struct {
		name    string
		event   string
		status  int
		message string
	}{
		{"status text", `"Service Unavailable"`, 503, "Service Unavailable"},
		{"status text, other case", `"service unavailable"`, 503, "service unavailable"},
		{"code and text", `"429 Too Many Requests"`, 429, "429 Too Many Requests"},
		{"HTML page", `"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"`, 502, "502 Bad Gateway"},
		{"text naming no status", `"upstream exploded"`, 502, "upstream exploded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, reply{events: []string{tt.event}})
			var sleeps []time.Duration
			m := New(srv.config("gpt-4.1", &sleeps))
			_, err := m.Stream(context.Background(), userRequest("q"), nil)
			var me *llm.ModelError
			require.ErrorAs(t, err, &me)
			assert.NotContains(t, me.Message, "not a chunk")
			assert.Equal(t, tt.status, me.StatusCode, "StatusCode")
			assert.True(t, me.Retryable, "Retryable")
			assert.Equal(t, tt.message, me.Message, "Message: the text, unquoted")
			assert.Equal(t, 1+DefaultMaxRetries, srv.hits(), "attempts")
		})
	}
}

// TestStreamErrorEventBareStringAfterDeltas sends a JSON string event after
// part of the reply was delivered: the error keeps its status, and the
// call is not retried (the caller saw part of a reply).
func TestStreamErrorEventBareStringAfterDeltas(t *testing.T) {
	srv := newFakeServer(t, reply{events: []string{
		`{"id":"x","choices":[{"index":0,"delta":{"content":"half"}}]}`,
		`"Service Unavailable"`,
	}})
	m := New(srv.config("gpt-4.1", nil))
	_, err := m.Stream(context.Background(), userRequest("q"), nil)
	var me *llm.ModelError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, 503, me.StatusCode, "StatusCode")
	assert.Equal(t, 1, srv.hits(), "attempts: a delta was delivered")
}

// TestStreamedErrorCodeStatus sends OpenAI-shaped error events inside a
// 200 stream, which name a code but no status: the status is the one
// OpenAI answers that code with, so that a caller branching on 429 sees
// a rate limit whether it was streamed or not (issue 23 item 15).
func TestStreamedErrorCodeStatus(t *testing.T) {
	tests := []struct {
		name      string
		event     string
		status    int
		retryable bool
	}{
		{"rate limit", `{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}`, 429, true},
		{"rate limit without a message", `{"error":{"code":"rate_limit_exceeded"}}`, 429, true},
		{"quota", `{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","code":"insufficient_quota"}}`, 429, false},
		{"server error", `{"error":{"message":"The server had an error.","type":"server_error","code":null}}`, 500, true},
		{"unknown code", `{"error":{"message":"no such model","type":"invalid_request_error","code":"model_not_found"}}`, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, reply{events: []string{tt.event}})
			m := New(srv.config("gpt-4.1", nil))
			_, err := m.Stream(context.Background(), userRequest("q"), nil)
			var me *llm.ModelError
			require.ErrorAs(t, err, &me)
			assert.Equal(t, tt.status, me.StatusCode, "StatusCode")
			assert.Equal(t, tt.retryable, me.Retryable, "Retryable")
			wantHits := 1
			if tt.retryable {
				wantHits = 1 + DefaultMaxRetries
			}
			assert.Equal(t, wantHits, srv.hits(), "attempts")
		})
	}
}

// TestErrorBodyText checks the message of failed responses whose body is
// not OpenAI's shape: an HTML page gives its title (its text without tags
// when it has none), not its markup cut at 1 KB; a JSON string is
// unquoted (issue 23 item 15).
func TestErrorBodyText(t *testing.T) {
	nginx := "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
	cloudflare := "<!DOCTYPE html>\n<html lang=\"en-US\"><head><meta charset=\"UTF-8\" />\n<title>api.example.com | 524: A timeout occurred</title>" +
		"<style>" + strings.Repeat("body{margin:0}", 200) + "</style></head><body><h1>A timeout occurred</h1></body></html>"
	tests := []struct {
		name    string
		status  int
		ct      string
		body    string
		message string
	}{
		{"nginx page", 502, "text/html", nginx, "502 Bad Gateway"},
		{"long page with a title", 524, "text/html", cloudflare, "api.example.com | 524: A timeout occurred"},
		{"title with entities and spaces", 503, "text/html", "<html><head><TITLE>\n  Service &amp; API\n  Unavailable </TITLE></head></html>", "Service & API Unavailable"},
		{"page without a title", 500, "text/html", "<html><body><h1>500 Internal Server Error</h1><p>Sorry.</p></body></html>", "500 Internal Server Error Sorry."},
		{"JSON string", 502, "application/json", `"Bad Gateway"`, "Bad Gateway"},
		{"JSON string of HTML", 502, "application/json", `"<html><body>502 Bad Gateway</body></html>"`, "502 Bad Gateway"},
		{"JSON string with escapes", 400, "application/json", `"model \"x\" not loaded\n"`, `model "x" not loaded`},
		{"plain text is kept", 500, "text/plain", "upstream <b> failed", "upstream <b> failed"},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%t", tt.name, stream), func(t *testing.T) {
				srv := newFakeServer(t, reply{status: tt.status, header: map[string]string{"Content-Type": tt.ct}, body: tt.body})
				cfg := srv.config("gpt-4.1", nil)
				cfg.MaxRetries = -1
				m := New(cfg)
				var err error
				if stream {
					_, err = m.Stream(context.Background(), userRequest("q"), nil)
				} else {
					_, err = m.Generate(context.Background(), userRequest("q"))
				}
				var me *llm.ModelError
				require.ErrorAs(t, err, &me)
				assert.Equal(t, tt.status, me.StatusCode, "StatusCode")
				assert.Equal(t, tt.message, me.Message, "Message")
			})
		}
	}
}

// TestBaseURLHintOnlyWithoutVersion answers 404 with a body that is not
// OpenAI's: the hint that BaseURL should end in /v1 is given only when it
// does not name a version already; a server at /v1 that answers 404 (a
// model it does not have) gets no such hint (issue 23 item 15).
func TestBaseURLHintOnlyWithoutVersion(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":"model 'llama9' not found, try pulling it first"}`)
	}))
	defer srv.Close()
	tests := []struct {
		base string
		hint bool
	}{
		{"", true},
		{"/", true},
		{"/api", true},
		{"/v1", false},
		{"/v1/", false},
		{"/openai/v1", false},
		{"/api/v1", false},
		{"/v1beta/openai", false},
		{"/api/paas/v4", false},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%q/stream=%t", tt.base, stream), func(t *testing.T) {
				m := New(Config{BaseURL: srv.URL + tt.base, Model: "llama9"})
				var err error
				if stream {
					_, err = m.Stream(context.Background(), userRequest("q"), nil)
				} else {
					_, err = m.Generate(context.Background(), userRequest("q"))
				}
				var me *llm.ModelError
				require.ErrorAs(t, err, &me)
				assert.Equal(t, 404, me.StatusCode)
				assert.Contains(t, me.Message, "model 'llama9' not found")
				if tt.hint {
					assert.Contains(t, me.Message, "/v1", "the hint")
				} else {
					assert.NotContains(t, me.Message, "BaseURL", "no hint when BaseURL names a version")
				}
			})
		}
	}
}
