package openai

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/llm"
)

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
