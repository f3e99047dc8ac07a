package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// specPath is the official OpenAI description, kept in the repository with
// its licence and source (testdata/openai-openapi/SOURCE.md), so that these
// tests run on every clone.
var specPath = filepath.Join("testdata", "openai-openapi", "openapi.yaml")

var spec struct {
	once  sync.Once
	route *routers.Route
	err   error
}

// chatRoute loads the spec once per test binary and returns the route of
// POST /chat/completions. A missing or unreadable spec fails the test.
func chatRoute(tb testing.TB) *routers.Route {
	tb.Helper()
	spec.once.Do(func() {
		doc, err := openapi3.NewLoader().LoadFromFile(specPath)
		if err != nil {
			spec.err = fmt.Errorf("loading %s: %w", specPath, err)
			return
		}
		item := doc.Paths.Find("/chat/completions")
		if item == nil || item.Post == nil {
			spec.err = fmt.Errorf("%s has no POST /chat/completions", specPath)
			return
		}
		spec.route = &routers.Route{Spec: doc, Path: "/chat/completions", PathItem: item, Method: http.MethodPost, Operation: item.Post}
	})
	require.NotNil(tb, spec.route, "OpenAPI spec: %v", spec.err)
	return spec.route
}

// validateChatRequest checks a request body against the spec.
func validateChatRequest(route *routers.Route, body []byte) error {
	req, err := http.NewRequest(http.MethodPost, "http://api.test/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	return openapi3filter.ValidateRequest(context.Background(), &openapi3filter.RequestValidationInput{
		Request: req,
		Route:   route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
	})
}

// reply is one scripted answer of the fake server.
type reply struct {
	status int
	header map[string]string
	// body is a JSON body (or any text) sent as is.
	body string
	// file, if set, names a testdata file sent as body; a .sse file is
	// streamed line by line with a flush after each event.
	file string
	// events are SSE data payloads, each sent as "data: <e>\n\n".
	events []string
	// hang, after the events, blocks until the client goes away.
	hang bool
	// drop, after the events, closes the TCP connection abruptly.
	drop bool
}

// fakeServer is an OpenAI-compatible endpoint that validates every request
// body against the spec and answers with scripted replies, the last one
// repeated.
type fakeServer struct {
	t       *testing.T
	srv     *httptest.Server
	route   *routers.Route
	mu      sync.Mutex
	replies []reply
	bodies  []map[string]any
	headers []http.Header
}

func newFakeServer(t *testing.T, replies ...reply) *fakeServer {
	t.Helper()
	f := &fakeServer{t: t, route: chatRoute(t), replies: replies}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// config returns a Config aimed at the fake server that records retry
// delays instead of sleeping.
func (f *fakeServer) config(model string, sleeps *[]time.Duration) Config {
	return Config{
		APIKey:  "sk-test",
		BaseURL: f.srv.URL + "/v1",
		Model:   model,
		Sleep: func(ctx context.Context, d time.Duration) error {
			if sleeps != nil {
				*sleeps = append(*sleeps, d)
			}
			return ctx.Err()
		},
	}
}

func (f *fakeServer) hits() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.bodies)
}

func (f *fakeServer) body(i int) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i < 0 {
		i += len(f.bodies)
	}
	return f.bodies[i]
}

func (f *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	// The server's goroutine: assert only, never require.
	if !assert.NoError(f.t, err, "reading request") {
		return
	}
	assert.Equal(f.t, http.MethodPost, r.Method, "unexpected %s %s", r.Method, r.URL.Path)
	assert.Equal(f.t, "/v1/chat/completions", r.URL.Path, "unexpected %s %s", r.Method, r.URL.Path)
	if err := validateChatRequest(f.route, raw); !assert.NoError(f.t, err, "request does not match the OpenAPI spec\nbody: %s", raw) {
		http.Error(w, `{"error":{"message":"invalid request","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	var body map[string]any
	assert.NoError(f.t, json.Unmarshal(raw, &body), "request body")
	f.mu.Lock()
	n := len(f.bodies)
	f.bodies = append(f.bodies, body)
	f.headers = append(f.headers, r.Header.Clone())
	rep := f.replies[min(n, len(f.replies)-1)]
	f.mu.Unlock()

	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	data := []byte(rep.body)
	if rep.file != "" {
		if data, err = os.ReadFile(filepath.Join("testdata", rep.file)); !assert.NoError(f.t, err, "fixture") {
			return
		}
	}
	streaming := len(rep.events) > 0 || strings.HasSuffix(rep.file, ".sse") || rep.hang || rep.drop
	if streaming {
		w.Header().Set("Content-Type", "text/event-stream")
	} else if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	status := rep.status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	flusher := w.(http.Flusher)
	if !streaming {
		w.Write(data)
		return
	}
	if len(data) > 0 {
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			fmt.Fprintf(w, "%s\n", sc.Text())
			if sc.Text() == "" {
				flusher.Flush()
			}
		}
	}
	for _, e := range rep.events {
		fmt.Fprintf(w, "data: %s\n\n", e)
		flusher.Flush()
	}
	switch {
	case rep.hang:
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
			assert.Fail(f.t, "client did not go away after cancellation")
		}
	case rep.drop:
		conn, _, err := http.NewResponseController(w).Hijack()
		if !assert.NoError(f.t, err, "hijack") {
			return
		}
		conn.Close()
	}
}
