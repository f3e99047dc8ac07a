package anthropic_test

import (
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

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/providers/anthropic"
)

// testKey is the API key the tests configure; the server checks that it
// arrives, and the redaction tests that it shows nowhere else.
const testKey = "sk-ant-api03-test-SECRET-0123456789"

// answer is one scripted response of the fake server.
type answer struct {
	status int
	header map[string]string
	body   string // a JSON body, or an SSE stream when sse is set
	sse    bool
}

// fixture reads testdata/name.
func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err, "fixture %s", name)
	return string(b)
}

func ok(t *testing.T, name string) answer {
	return answer{status: 200, body: fixture(t, name), sse: strings.HasSuffix(name, ".sse")}
}

func apiError(status int, typ, msg string) answer {
	return answer{status: status, body: fmt.Sprintf(`{"type":"error","error":{"type":%q,"message":%q},"request_id":"req_011CTest"}`, typ, msg)}
}

// received is a request the fake server decoded.
type received struct {
	params sdk.MessageNewParams
	raw    map[string]any // the body as generic JSON, "stream" removed
	stream bool
	header http.Header
}

// fakeServer speaks Anthropic's Messages API from a script: the n-th
// attempt gets the n-th answer (the last one repeats), or what answerFor
// returns. Every request body is decoded strictly with the SDK's own
// request type: it must decode into anthropic.MessageNewParams and encode
// back to the same JSON, so that an unknown or misspelled field (which
// the SDK's decoder would drop) fails the test.
type fakeServer struct {
	t         *testing.T
	srv       *httptest.Server
	answerFor func(n int, r received) answer

	mu       sync.Mutex
	answers  []answer
	requests []received
}

func newServer(t *testing.T, answers ...answer) *fakeServer {
	f := &fakeServer{t: t, answers: answers}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// model returns a Model talking to f, with the test key and instant
// retries whose delays are appended to *slept when slept is not nil.
func (f *fakeServer) model(cfg anthropic.Config, slept *[]time.Duration) *anthropic.Model {
	cfg.BaseURL = f.srv.URL
	if cfg.APIKey == "" {
		cfg.APIKey = testKey
	}
	var mu sync.Mutex
	cfg.Sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		if slept != nil {
			*slept = append(*slept, d)
		}
		return ctx.Err()
	}
	return anthropic.New(cfg)
}

// attempts returns the number of requests the server saw.
func (f *fakeServer) attempts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

// request returns the i-th request the server saw.
func (f *fakeServer) request(i int) received {
	f.mu.Lock()
	defer f.mu.Unlock()
	require.Greater(f.t, len(f.requests), i, "request %d was never sent", i)
	return f.requests[i]
}

func (f *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	t := f.t
	body, err := io.ReadAll(r.Body)
	assert.NoError(t, err, "read the request body")
	assert.Equal(t, "POST", r.Method)
	assert.Equal(t, "/v1/messages", r.URL.Path)
	assert.NotEmpty(t, r.Header.Get("anthropic-version"), "anthropic-version header")
	assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
	rec, err := decodeStrict(body)
	assert.NoError(t, err, "the request body against the SDK's MessageNewParams")
	rec.header = r.Header.Clone()

	f.mu.Lock()
	n := len(f.requests)
	f.requests = append(f.requests, rec)
	var a answer
	switch {
	case f.answerFor != nil:
		a = f.answerFor(n, rec)
	case n < len(f.answers):
		a = f.answers[n]
	case len(f.answers) > 0:
		a = f.answers[len(f.answers)-1]
	}
	f.mu.Unlock()
	if a.status == 0 {
		assert.Fail(t, "no answer scripted", "attempt %d", n)
		a = apiError(500, "api_error", "no answer scripted")
	}
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	if w.Header().Get("Content-Type") == "" {
		if a.sse {
			w.Header().Set("Content-Type", "text/event-stream")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
	}
	w.Header().Set("request-id", fmt.Sprintf("req_%d", n))
	w.WriteHeader(a.status)
	if !a.sse {
		_, _ = io.WriteString(w, a.body)
		return
	}
	fl, _ := w.(http.Flusher)
	for ev := range strings.SplitSeq(a.body, "\n\n") {
		if strings.TrimSpace(ev) == "" {
			continue
		}
		if _, err := io.WriteString(w, ev+"\n\n"); err != nil {
			return
		}
		if fl != nil {
			fl.Flush()
		}
	}
}

// decodeStrict decodes a request body into the SDK's MessageNewParams
// (with json.Decoder's DisallowUnknownFields, although the SDK's own
// decoder ignores unknown fields) and checks that encoding the result
// gives the same JSON back: a field the SDK does not know would be lost.
func decodeStrict(body []byte) (received, error) {
	var rec received
	if err := json.Unmarshal(body, &rec.raw); err != nil {
		return rec, fmt.Errorf("body is not a JSON object: %w", err)
	}
	if s, ok := rec.raw["stream"]; ok {
		if s != true {
			return rec, fmt.Errorf(`"stream" is %v, want true or absent`, s)
		}
		rec.stream = true
		delete(rec.raw, "stream")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec.params); err != nil {
		return rec, fmt.Errorf("decode: %w", err)
	}
	again, err := json.Marshal(rec.params)
	if err != nil {
		return rec, fmt.Errorf("encode again: %w", err)
	}
	var back map[string]any
	if err := json.Unmarshal(again, &back); err != nil {
		return rec, err
	}
	if d := cmp.Diff(rec.raw, back); d != "" {
		return rec, fmt.Errorf("fields the SDK's request type does not know or spells otherwise (-sent +decoded):\n%s", d)
	}
	return rec, nil
}

// jsonOf returns v as generic JSON, for comparisons with received.raw.
func jsonOf(t *testing.T, s string) any {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal([]byte(s), &v), "test JSON: %s", s)
	return v
}
