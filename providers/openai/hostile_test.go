package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/snapshots"
)

// secretKey is the API key of the secrets tests: servers echo it back.
const secretKey = "sk-proj-SECRET0123456789abcdef"

// errorChainTexts returns the Error() text of err and of every error it
// wraps, through Unwrap() error and Unwrap() []error.
func errorChainTexts(err error) []string {
	var out []string
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		out = append(out, e.Error(), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e))
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		}
	}
	walk(err)
	return out
}

// TestSecretNeverInErrors has servers and proxies echo the Authorization
// header in error bodies of every shape, and checks that the key appears
// nowhere in the error, in any error it wraps, or in a snapshots recording
// (issue 8 item 7).
func TestSecretNeverInErrors(t *testing.T) {
	echo := "Bearer " + secretKey
	tests := []struct {
		name  string
		reply reply
		keep  string // text of the body that must survive
	}{
		{"401 OpenAI-shaped", reply{status: 401, body: errorBody("Incorrect API key provided: "+secretKey+". Header was "+echo+".", "invalid_request_error", "invalid_api_key")}, "Incorrect API key provided"},
		{"500 HTML from a proxy", reply{status: 500, header: map[string]string{"Content-Type": "text/html"}, body: "<html><pre>Authorization: " + echo + "\nAuthorization: " + echo + "</pre></html>"}, "Authorization: Bearer [redacted]"},
		{"400 string error", reply{status: 400, body: `{"error":"bad header ` + echo + `"}`}, "bad header"},
		{"stream error event, OpenAI-shaped", reply{events: []string{errorBody("denied for "+secretKey, "invalid_request_error", "")}}, "denied for"},
		{"stream error event, string", reply{events: []string{`{"error":"denied for ` + secretKey + `"}`}}, "denied for"},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			if len(tt.reply.events) > 0 && !stream {
				continue
			}
			t.Run(fmt.Sprintf("%s/stream=%t", tt.name, stream), func(t *testing.T) {
				srv := newFakeServer(t, tt.reply)
				cfg := srv.config("gpt-4.1", nil)
				cfg.APIKey = secretKey
				cfg.MaxRetries = -1
				rec := snapshots.Record(New(cfg))
				var err error
				if stream {
					_, err = rec.Stream(context.Background(), userRequest("q"), nil)
				} else {
					_, err = rec.Generate(context.Background(), userRequest("q"))
				}
				require.Error(t, err)
				assert.Equal(t, "Bearer "+secretKey, srv.headers[0].Get("Authorization"), "the key is still sent")
				for _, s := range errorChainTexts(err) {
					assert.NotContains(t, s, secretKey)
				}
				// The message is the contract here: the secret is redacted
				// from the text, and the rest of it is kept.
				assert.Contains(t, err.Error(), tt.keep, "the rest of the body's text is kept")
				assert.Contains(t, err.Error(), "[redacted]")

				path := filepath.Join(t.TempDir(), "rec.json")
				require.NoError(t, rec.WriteFile(path))
				data, err := os.ReadFile(path)
				require.NoError(t, err)
				assert.NotContains(t, string(data), secretKey)
				assert.Contains(t, string(data), tt.keep)
			})
		}
	}
}

// TestSecretNeverFormatted prints a Config and a Model every way fmt and
// slog can, and checks the key is never shown (issue 8 item 7).
func TestSecretNeverFormatted(t *testing.T) {
	cfg := Config{APIKey: secretKey, BaseURL: "http://127.0.0.1:1/v1", Model: "gpt-4.1", Organization: "org-1"}
	m := New(cfg)
	values := map[string]any{"Config": cfg, "*Config": &cfg, "*Model": m, "[]Config": []Config{cfg}, "struct{C Config}": struct{ C Config }{cfg}}
	for name, v := range values {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T %v"} {
			out := fmt.Sprintf(verb, v)
			assert.NotContains(t, out, secretKey, "%s formatted with %s: %s", name, verb, out)
			assert.NotContains(t, strings.ToLower(out), fmt.Sprintf("%x", secretKey), "%s formatted with %s", name, verb)
		}
	}
	for name, v := range values {
		var buf bytes.Buffer
		slog.New(slog.NewJSONHandler(&buf, nil)).Info("config", "value", v)
		slog.New(slog.NewTextHandler(&buf, nil)).Info("config", "value", v)
		assert.NotContains(t, buf.String(), secretKey, "%s through slog: %s", name, buf.String())
	}
	// What is shown is still useful.
	assert.Contains(t, fmt.Sprintf("%+v", cfg), "gpt-4.1")
	assert.Contains(t, fmt.Sprintf("%+v", cfg), "[redacted]")
	assert.Contains(t, fmt.Sprintf("%#v", cfg), "openai.Config{")
	assert.NotContains(t, fmt.Sprintf("%v", Config{Model: "x"}), "[redacted]", "an empty key is not reported as set")
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("m", "model", m)
	assert.Contains(t, buf.String(), `"model":"gpt-4.1"`)
}

// TestNonOpenAIErrorBodies checks server errors whose body is not OpenAI's
// shape: the status survives, retries follow it, and the message shows the
// body's text (issue 13 item 9).
func TestNonOpenAIErrorBodies(t *testing.T) {
	tests := []struct {
		name      string
		reply     reply
		status    int
		retryable bool
		message   string // contained in ModelError.Message
	}{
		{"503 string error", reply{status: 503, body: `{"error":"Service Unavailable"}`}, 503, true, "Service Unavailable"},
		{"429 string error", reply{status: 429, body: `{"error":"Too Many Requests"}`}, 429, true, "Too Many Requests"},
		{"500 HTML", reply{status: 500, header: map[string]string{"Content-Type": "text/html"}, body: "<html><body><h1>500 Internal Server Error</h1></body></html>"}, 500, true, "500 Internal Server Error"},
		{"502 empty body", reply{status: 502, header: map[string]string{"Content-Type": "text/plain"}}, 502, true, "502 Bad Gateway"},
		{"503 error object without message", reply{status: 503, body: `{"error":{"code":"unavailable"}}`}, 503, true, "unavailable"},
		{"400 string error is not retried", reply{status: 400, body: `{"error":"model not loaded"}`}, 400, false, "model not loaded"},
		{"404 express-style", reply{status: 404, body: `{"error":"Not Found","message":"Cannot POST /v1/chat/completions","status":404}`}, 404, false, "Cannot POST"},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%t", tt.name, stream), func(t *testing.T) {
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
				require.ErrorAs(t, err, &me)
				assert.Equal(t, tt.status, me.StatusCode, "status")
				assert.Equal(t, tt.retryable, me.Retryable, "retryable")
				assert.Contains(t, me.Message, tt.message)
				wantHits := 1
				if tt.retryable {
					wantHits = 1 + DefaultMaxRetries
				}
				assert.Equal(t, wantHits, srv.hits(), "attempts")
				var reqErr *sdk.RequestError
				assert.ErrorAs(t, err, &reqErr, "still unwraps to go-openai's error")
			})
		}
	}
}

// TestStreamErrorEventNotOpenAIShaped sends an error event whose "error" is
// a string inside a 200 stream, as @dwmkerr/mock-llm does for every error:
// go-openai hands back an empty chunk, which used to fail as "decoding
// stream chunk: unexpected end of JSON input".
func TestStreamErrorEventNotOpenAIShaped(t *testing.T) {
	tests := []struct {
		name      string
		event     string
		status    int
		retryable bool
		message   string
	}{
		{"status text", `{"error":"Service Unavailable"}`, 503, true, "Service Unavailable"},
		{"status field", `{"error":"Overloaded","message":"try later","status":529}`, 529, true, "try later"},
		{"unknown text", `{"error":"no such model"}`, 0, false, "no such model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, reply{events: []string{tt.event}})
			m := New(srv.config("gpt-4.1", nil))
			_, err := m.Stream(context.Background(), userRequest("q"), nil)
			var me *llm.ModelError
			require.ErrorAs(t, err, &me)
			assert.NotContains(t, me.Error(), "decoding stream chunk")
			assert.Equal(t, tt.status, me.StatusCode)
			assert.Equal(t, tt.retryable, me.Retryable)
			assert.Contains(t, me.Message, tt.message)
			wantHits := 1
			if tt.retryable {
				wantHits = 1 + DefaultMaxRetries
			}
			assert.Equal(t, wantHits, srv.hits(), "attempts")
		})
	}
}

// TestBaseURLWithoutV1 aims the adapter at a server's root instead of its
// /v1: the 404 keeps its status and the message says what to check.
func TestBaseURLWithoutV1(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"error":"Not Found","message":"Cannot %s %s","status":404}`, r.Method, r.URL.Path)
	}))
	defer srv.Close()
	for _, stream := range []bool{false, true} {
		hits.Store(0)
		m := New(Config{BaseURL: srv.URL, Model: "gpt-4.1"})
		var err error
		if stream {
			_, err = m.Stream(context.Background(), userRequest("q"), nil)
		} else {
			_, err = m.Generate(context.Background(), userRequest("q"))
		}
		var me *llm.ModelError
		require.ErrorAs(t, err, &me)
		assert.Equal(t, 404, me.StatusCode)
		assert.False(t, me.Retryable)
		assert.Contains(t, me.Message, "Cannot POST /chat/completions")
		assert.Contains(t, me.Message, "/v1")
		assert.EqualValues(t, 1, hits.Load())
	}
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// TestReplySizeCap checks the one cap on a reply's size, streamed or not
// (issue 8 item 9): past it the call fails with a *ReplyTooLargeError, the
// connection is dropped, and memory stays bounded by the cap.
func TestReplySizeCap(t *testing.T) {
	const limit = 1 << 20
	const sent = 64 << 20
	chunk := []byte("data: " + textChunk + "\n\n")
	tests := []struct {
		name   string
		stream bool
		write  func(w io.Writer) (int64, error)
	}{
		{"stream of many events", true, func(w io.Writer) (int64, error) {
			var n int64
			for n < sent {
				k, err := w.Write(chunk)
				n += int64(k)
				if err != nil {
					return n, err
				}
			}
			return n, nil
		}},
		{"stream of one endless line", true, func(w io.Writer) (int64, error) {
			n, err := w.Write([]byte("data: {\"x\":\""))
			line := bytes.Repeat([]byte("x"), 64<<10)
			total := int64(n)
			for total < sent && err == nil {
				n, err = w.Write(line)
				total += int64(n)
			}
			return total, err
		}},
		{"JSON body", false, func(w io.Writer) (int64, error) {
			body := `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"` +
				strings.Repeat("x", 2*limit) + `"},"finish_reason":"stop"}]}`
			n, err := io.WriteString(w, body)
			return int64(n), err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var written atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				if tt.stream {
					w.Header().Set("Content-Type", "text/event-stream")
				} else {
					w.Header().Set("Content-Type", "application/json")
				}
				tt.write(countingWriter{w, &written})
			}))
			defer srv.Close()
			m := New(Config{BaseURL: srv.URL + "/v1", Model: "gpt-4.1", MaxReplyBytes: limit})
			var ms0, ms1 goruntime.MemStats
			goruntime.GC()
			goruntime.ReadMemStats(&ms0)
			var err error
			if tt.stream {
				_, err = m.Stream(context.Background(), userRequest("q"), nil)
			} else {
				_, err = m.Generate(context.Background(), userRequest("q"))
			}
			goruntime.ReadMemStats(&ms1)
			var tooLarge *ReplyTooLargeError
			require.ErrorAs(t, err, &tooLarge)
			assert.EqualValues(t, limit, tooLarge.Limit)
			assert.False(t, llm.IsRetryable(err), "a reply too large is not retried")
			var me *llm.ModelError
			require.ErrorAs(t, err, &me)
			assert.Contains(t, me.Message, "MaxReplyBytes")
			srv.CloseClientConnections()
			srv.Close() // waits for the handler
			// The client stopped reading at the cap: the server could
			// write little more than what the connection buffers.
			assert.Less(t, written.Load(), int64(sent/4), "the server wrote %d MiB", written.Load()>>20)
			// Allocations on both sides of the connection, for 64 MiB
			// sent: bounded by the cap, not by the reply.
			alloc := ms1.TotalAlloc - ms0.TotalAlloc
			t.Logf("allocated %d KiB; the server wrote %d KiB", alloc>>10, written.Load()>>10)
			if !raceEnabled {
				assert.Less(t, alloc, uint64(24<<20), "allocated %d MiB reading a reply capped at 1 MiB", alloc>>20)
			}
		})
	}

	// Under the cap, replies pass; the zero Config takes the default cap.
	srv := newFakeServer(t, reply{file: "stream_text.sse"})
	cfg := srv.config("gpt-4.1", nil)
	cfg.MaxReplyBytes = 4 << 10
	_, err := New(cfg).Stream(context.Background(), userRequest("q"), nil)
	require.NoError(t, err)
	assert.EqualValues(t, DefaultMaxReplyBytes, Config{}.withDefaults().MaxReplyBytes)
	assert.EqualValues(t, 32<<20, DefaultMaxReplyBytes)
	var tooLarge *ReplyTooLargeError
	assert.False(t, errors.As(err, &tooLarge))
	_ = defs.RoleUser
}
