package openai

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/llm"
)

// oddServer answers every request with status 200, Content-Type ct and
// body as is, and counts the requests.
func oddServer(t *testing.T, ct, body string) (Config, *int) {
	t.Helper()
	hits := new(int)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*hits++
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return Config{BaseURL: srv.URL + "/v1", Model: "m", MaxRetries: -1}, hits
}

func sseData(payloads ...string) string {
	var s string
	for _, p := range payloads {
		s += "data: " + p + "\n\n"
	}
	return s
}

// callOdd sends one request, streamed or not, with a deadline, and returns
// the reply, the *llm.ModelError and the deltas delivered.
func callOdd(t *testing.T, cfg Config, stream bool) (*llm.Reply, *llm.ModelError, []llm.Delta) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m := New(cfg)
	var deltas []llm.Delta
	var rep *llm.Reply
	var err error
	if stream {
		rep, err = m.Stream(ctx, userRequest("hi"), func(d llm.Delta) { deltas = append(deltas, d) })
	} else {
		rep, err = m.Generate(ctx, userRequest("hi"))
	}
	if err == nil {
		return rep, nil, deltas
	}
	me, ok := errors.AsType[*llm.ModelError](err)
	require.True(t, ok, "error %T is not an *llm.ModelError: %v", err, err)
	return rep, me, deltas
}

// TestErrorInsideSuccessfulReply has servers report a failure inside a 200
// reply: OpenRouter's mid-stream error chunk (an "error" beside the
// choices, finish_reason "error"), an error chunk whose "error" is not the
// first key (go-openai only sees those that start with it), a proxy's 200
// {"error":…} body, and finish_reason "error" alone. None may become a
// reply: the partial text must not join the transcript, and the error must
// carry the server's message.
func TestErrorInsideSuccessfulReply(t *testing.T) {
	half := `{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"half a repl"}}]}`
	tests := []struct {
		name      string
		stream    bool
		ct, body  string
		retryable bool
		status    int
		message   string
	}{
		{
			name: "OpenRouter mid-stream error chunk", stream: true, ct: "text/event-stream",
			body: sseData(half,
				`{"id":"x","object":"chat.completion.chunk","provider":"openai","error":{"code":"server_error","message":"Provider disconnected unexpectedly"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}`,
				"[DONE]"),
			retryable: true, status: 500, message: "Provider disconnected unexpectedly",
		},
		{
			name: "error chunk with a numeric code", stream: true, ct: "text/event-stream",
			body:      sseData(half, `{"id":"x","error":{"code":502,"message":"upstream went away"},"choices":[]}`, "[DONE]"),
			retryable: true, status: 502, message: "upstream went away",
		},
		{
			name: "error chunk naming a client error", stream: true, ct: "text/event-stream",
			body:    sseData(half, `{"id":"x","error":{"code":400,"message":"bad tool schema"}}`, "[DONE]"),
			status:  400,
			message: "bad tool schema",
		},
		{
			name: "finish_reason error alone, streamed", stream: true, ct: "text/event-stream",
			body:      sseData(half, `{"id":"x","choices":[{"index":0,"delta":{},"finish_reason":"error"}]}`, "[DONE]"),
			retryable: true, message: `finish_reason "error"`,
		},
		{
			name: "200 with an OpenAI-shaped error", ct: "application/json",
			body:    `{"error":{"message":"The model xyz does not exist","type":"invalid_request_error","code":"model_not_found"}}`,
			message: "The model xyz does not exist",
		},
		{
			name: "200 with a string error", ct: "application/json",
			body:    `{"error":"upstream overloaded"}`,
			message: "upstream overloaded",
		},
		{
			name: "200 with an error and a status", ct: "application/json",
			body:      `{"error":{"message":"try again","code":503}}`,
			retryable: true, status: 503, message: "try again",
		},
		{
			name: "finish_reason error alone", ct: "application/json",
			body:      `{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"half a repl"},"finish_reason":"error"}]}`,
			retryable: true, message: `finish_reason "error"`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _ := oddServer(t, tc.ct, tc.body)
			rep, me, _ := callOdd(t, cfg, tc.stream)
			require.NotNil(t, me, "a failed reply was returned as a reply: %+v", rep)
			assert.Nil(t, rep)
			assert.Contains(t, me.Message, tc.message)
			assert.Equal(t, tc.retryable, me.Retryable, "Retryable")
			assert.Equal(t, tc.status, me.StatusCode, "StatusCode")
		})
	}
}

// TestNullErrorIsNoError checks that a reply or chunk with "error": null
// (some servers always send the field) is a normal reply.
func TestNullErrorIsNoError(t *testing.T) {
	for _, stream := range []bool{false, true} {
		body := `{"id":"x","error":null,"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`
		ct := "application/json"
		if stream {
			body = sseData(`{"id":"x","error":null,"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}`, "[DONE]")
			ct = "text/event-stream"
		}
		cfg, _ := oddServer(t, ct, body)
		rep, me, _ := callOdd(t, cfg, stream)
		require.Nil(t, me)
		assert.Equal(t, "hi", rep.Message.Content)
		assert.Equal(t, llm.FinishStop, rep.FinishReason)
	}
}

// TestStreamKeepalives has a server send SSE comments while the model
// thinks, as sse-starlette and OpenRouter do: they are not an error
// (go-openai fails a stream after 300 lines without data), and a server
// that sends nothing else is stopped by MaxReplyBytes.
func TestStreamKeepalives(t *testing.T) {
	var body strings.Builder
	for range 1000 {
		body.WriteString(": ping - 2026-11-23 16:00:00\r\n\r\n")
	}
	body.WriteString(sseData(`{"id":"x","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}`, "[DONE]"))
	cfg, _ := oddServer(t, "text/event-stream", body.String())
	rep, me, _ := callOdd(t, cfg, true)
	require.Nil(t, me)
	assert.Equal(t, "hi", rep.Message.Content)

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for r.Context().Err() == nil {
			if _, err := io.WriteString(w, ": keepalive\n\n"); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	// 64 KiB of keepalives, not more: the test must not race its 5 s
	// deadline on a loaded machine under -race (it did at 1 MiB in CI).
	_, me, _ = callOdd(t, Config{BaseURL: srv.URL + "/v1", Model: "m", MaxRetries: -1, MaxReplyBytes: 64 << 10}, true)
	require.NotNil(t, me)
	tl, ok := errors.AsType[*ReplyTooLargeError](me)
	require.True(t, ok, "want a *ReplyTooLargeError, got %v", me)
	assert.True(t, tl.Streamed)
}

// TestStreamAnsweredWithWholeReply has servers ignore "stream": true. A
// whole JSON reply is taken as the reply (its parts delivered as deltas),
// an error in it is the error, and a stream labelled with another
// Content-Type is still read as a stream. Before, each was an ErrStreamCut,
// retried MaxRetries times and then reported as a cut stream.
func TestStreamAnsweredWithWholeReply(t *testing.T) {
	whole := `{"id":"w1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Paris.","reasoning_content":"Easy.",` +
		`"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}],` +
		`"usage":{"prompt_tokens":10,"completion_tokens":3}}`
	t.Run("whole reply", func(t *testing.T) {
		cfg, hits := oddServer(t, "application/json", "\n  "+whole)
		rep, me, deltas := callOdd(t, cfg, true)
		require.Nil(t, me)
		assert.Equal(t, 1, *hits)
		assert.Equal(t, "Paris.", rep.Message.Content)
		assert.Equal(t, "Easy.", rep.Message.Reasoning)
		require.Len(t, rep.Message.ToolCalls, 1)
		assert.Equal(t, "c1", rep.Message.ToolCalls[0].ID)
		assert.JSONEq(t, `{"city":"Paris"}`, string(rep.Message.ToolCalls[0].Arguments))
		assert.Equal(t, llm.FinishToolCalls, rep.FinishReason)
		assert.Equal(t, llm.Usage{InputTokens: 10, OutputTokens: 3}, rep.Usage)
		assert.Equal(t, []llm.Delta{
			{Content: "Paris.", Reasoning: "Easy."},
			{ToolCall: &llm.ToolCallDelta{Index: 0, ID: "c1", Name: "get_weather", Arguments: `{"city":"Paris"}`}},
		}, deltas)
	})
	t.Run("whole error", func(t *testing.T) {
		cfg, _ := oddServer(t, "application/json", `{"error":{"message":"streaming is not supported","type":"invalid_request_error"}}`)
		rep, me, _ := callOdd(t, cfg, true)
		require.NotNil(t, me, "reply %+v", rep)
		assert.Contains(t, me.Message, "streaming is not supported")
		assert.False(t, me.Retryable)
	})
	t.Run("whole reply too large", func(t *testing.T) {
		cfg, _ := oddServer(t, "application/json", `{"id":"w1","choices":[{"index":0,"message":{"content":"`+strings.Repeat("x", 4096)+`"},"finish_reason":"stop"}]}`)
		cfg.MaxReplyBytes = 1024
		_, me, _ := callOdd(t, cfg, true)
		require.NotNil(t, me)
		_, ok := errors.AsType[*ReplyTooLargeError](me)
		assert.True(t, ok, "want a *ReplyTooLargeError, got %v", me)
	})
	t.Run("whole reply labelled as a stream", func(t *testing.T) {
		cfg, _ := oddServer(t, "text/event-stream", whole)
		rep, me, _ := callOdd(t, cfg, true)
		require.Nil(t, me)
		assert.Equal(t, "Paris.", rep.Message.Content)
	})
	t.Run("stream labelled as JSON", func(t *testing.T) {
		cfg, _ := oddServer(t, "application/json", sseData(`{"id":"x","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}`, "[DONE]"))
		rep, me, _ := callOdd(t, cfg, true)
		require.Nil(t, me)
		assert.Equal(t, "hi", rep.Message.Content)
	})
}

// TestUsageOutOfRange has servers report negative token counts and cached
// or reasoning tokens beyond their totals. Counts below zero would lower
// the run's usage and cost and let it evade its budgets: they become 0,
// and a part never exceeds its total.
func TestUsageOutOfRange(t *testing.T) {
	tests := []struct {
		name  string
		usage string
		want  llm.Usage
	}{
		{"negative", `{"prompt_tokens":-5,"completion_tokens":-1,"prompt_tokens_details":{"cached_tokens":-3},"completion_tokens_details":{"reasoning_tokens":-2}}`, llm.Usage{}},
		{"parts beyond totals", `{"prompt_tokens":10,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":50},"completion_tokens_details":{"reasoning_tokens":9}}`, llm.Usage{InputTokens: 10, OutputTokens: 4, CachedTokens: 10, ReasoningTokens: 4}},
		{"sound", `{"prompt_tokens":10,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":8},"completion_tokens_details":{"reasoning_tokens":2}}`, llm.Usage{InputTokens: 10, OutputTokens: 4, CachedTokens: 8, ReasoningTokens: 2}},
	}
	for _, tc := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s stream=%v", tc.name, stream), func(t *testing.T) {
				body := `{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":` + tc.usage + `}`
				ct := "application/json"
				if stream {
					body = sseData(`{"id":"x","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}`, `{"id":"x","choices":[],"usage":`+tc.usage+`}`, "[DONE]")
					ct = "text/event-stream"
				}
				cfg, _ := oddServer(t, ct, body)
				rep, me, _ := callOdd(t, cfg, stream)
				require.Nil(t, me)
				assert.Equal(t, tc.want, rep.Usage)
			})
		}
	}
}

// TestUndecodableReply has servers answer 200 with a body that is not a
// reply. The error says so and shows the body; an empty body (a proxy
// that dropped it) is retried.
func TestUndecodableReply(t *testing.T) {
	tests := []struct {
		name, ct, body string
		retryable      bool
		message        []string
	}{
		{"empty", "application/json", "", true, []string{"empty body"}},
		{"blank", "application/json", " \n", true, []string{"empty body"}},
		{"HTML", "text/html", "<html><body>Please log in</body></html>", false, []string{"not a chat completion", "Please log in"}},
		{"JSON array", "application/json", "[1,2]", false, []string{"not a chat completion", "[1,2]"}},
		{"arguments as a number", "application/json", `{"id":"x","choices":[{"index":0,"message":{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":12}}]},"finish_reason":"tool_calls"}]}`,
			false, []string{"not a chat completion", "arguments", `"arguments":12`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, hits := oddServer(t, tc.ct, tc.body)
			cfg.MaxRetries = 1
			cfg.Sleep = func(context.Context, time.Duration) error { return nil }
			rep, me, _ := callOdd(t, cfg, false)
			require.NotNil(t, me, "reply %+v", rep)
			for _, s := range tc.message {
				assert.Contains(t, me.Message, s)
			}
			assert.Equal(t, tc.retryable, me.Retryable, "Retryable")
			want := 1
			if tc.retryable {
				want = 2
			}
			assert.Equal(t, want, *hits, "requests")
		})
	}
}

// TestContextTooLongShapes sends the context-window errors of servers in
// the shapes they use, and checks ContextTooLong is set (and the error is
// not retried) for each, and not for errors that merely mention tokens.
func TestContextTooLongShapes(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   bool
	}{
		{"xAI", 400, `{"code":"Client specified an invalid argument","error":"This model's maximum prompt length is 131072 but the request contains 136973 tokens."}`, true},
		{"Gemini OpenAI compatibility", 400, `[{"error":{"code":400,"message":"The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}]`, true},
		{"Gemini object", 400, `{"error":{"code":400,"message":"The input token count (132478) exceeds the maximum number of tokens allowed (131072).","status":"INVALID_ARGUMENT"}}`, true},
		{"TGI", 422, `{"error":"Input validation error: ` + "`inputs` tokens + `max_new_tokens` must be <= 8192. Given: 6204 `inputs` tokens and 2047 `max_new_tokens`" + `","error_type":"validation"}`, true},
		{"vLLM", 400, `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.","type":"BadRequestError","param":null,"code":400}`, true},
		{"Anthropic compatibility", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 202128 tokens > 200000 maximum"}}`, true},
		{"rate limit on tokens is not context", 429, `{"error":{"message":"Request too large for model on tokens per minute (TPM): Limit 6000, Requested 14810","type":"tokens","code":"rate_limit_exceeded"}}`, false},
		{"max_tokens too large is not context", 400, `{"error":{"message":"max_tokens is too large: 100000. This model supports at most 16384 completion tokens.","type":"invalid_request_error","param":"max_tokens","code":"invalid_value"}}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			t.Cleanup(srv.Close)
			for _, stream := range []bool{false, true} {
				_, me, _ := callOdd(t, Config{BaseURL: srv.URL + "/v1", Model: "m", MaxRetries: -1}, stream)
				require.NotNil(t, me)
				assert.Equal(t, tc.want, me.ContextTooLong, "ContextTooLong (stream=%v): %s", stream, me.Message)
				assert.Equal(t, tc.status, me.StatusCode)
				if tc.want {
					assert.False(t, me.Retryable)
				}
			}
		})
	}
}

// TestStreamErrorEventThenStall has a server send an error event and then
// keep the connection open without the blank line that ends the event.
// go-openai waits for that line; the call must end at once with the
// event's error, not at the deadline.
func TestStreamErrorEventThenStall(t *testing.T) {
	for name, event := range map[string]string{
		"OpenAI-shaped": `{"error":{"message":"boom","type":"server_error"}}`,
		"string":        `{"error":"Service Unavailable"}`,
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, sseData(`{"id":"x","choices":[{"index":0,"delta":{"content":"half"}}]}`)+"data: "+event+"\n")
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
				case <-time.After(10 * time.Second):
				}
			}))
			t.Cleanup(srv.Close)
			start := time.Now()
			rep, me, _ := callOdd(t, Config{BaseURL: srv.URL + "/v1", Model: "m", MaxRetries: -1}, true)
			require.NotNil(t, me, "reply %+v", rep)
			assert.Less(t, time.Since(start), 2*time.Second, "the call waited for the deadline")
			assert.NotErrorIs(t, me, context.DeadlineExceeded)
			assert.True(t, me.Retryable, "a server error is retryable: %v", me)
		})
	}
}

// TestOddStreamsFoundSound pins what odd streams already assemble to (a
// review found these sound): the reply, or a retryable ErrStreamCut when
// the reply is incomplete.
func TestOddStreamsFoundSound(t *testing.T) {
	tc := func(index int, id, name, args string) string {
		s := fmt.Sprintf(`{"index":%d,"function":{"arguments":%q`, index, args)
		if name != "" {
			s += fmt.Sprintf(`,"name":%q`, name)
		}
		s += "}"
		if id != "" {
			s += fmt.Sprintf(`,"id":%q,"type":"function"`, id)
		}
		return fmt.Sprintf(`{"id":"x","choices":[{"index":0,"delta":{"tool_calls":[%s}]}}]}`, s)
	}
	text := func(s string) string {
		return fmt.Sprintf(`{"id":"x","choices":[{"index":0,"delta":{"content":%q}}]}`, s)
	}
	finish := func(r string) string {
		return fmt.Sprintf(`{"id":"x","choices":[{"index":0,"delta":{},"finish_reason":%q}]}`, r)
	}
	usage := func(in, out int) string {
		return fmt.Sprintf(`{"id":"x","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d}}`, in, out)
	}
	type call struct{ id, name, args string }
	tests := []struct {
		name    string
		body    string
		content string
		calls   []call
		usage   llm.Usage
		cut     bool
	}{
		{name: "indexes skip and go backwards",
			body:  sseData(tc(2, "c2", "b", `{"y":`), tc(0, "c0", "a", `{"x":`), tc(2, "", "", `2}`), tc(0, "", "", `1}`), finish("tool_calls"), "[DONE]"),
			calls: []call{{"c0", "a", `{"x":1}`}, {"c2", "b", `{"y":2}`}}},
		{name: "id and name in a later chunk",
			body:  sseData(tc(0, "", "", `{"x":`), tc(0, "c0", "a", `1}`), finish("tool_calls"), "[DONE]"),
			calls: []call{{"c0", "a", `{"x":1}`}}},
		{name: "arguments split inside an escape and a multibyte character",
			body:  sseData(tc(0, "c0", "a", `{"s":"a\`), tc(0, "", "", `"é`), tc(0, "", "", `"}`), finish("tool_calls"), "[DONE]"),
			calls: []call{{"c0", "a", `{"s":"a\"é"}`}}},
		{name: "usage in several chunks: the last counts",
			body:    sseData(text("hi"), usage(1, 1), finish("stop"), usage(10, 2), "[DONE]"),
			content: "hi", usage: llm.Usage{InputTokens: 10, OutputTokens: 2}},
		{name: "chunks after [DONE] are ignored",
			body:    sseData(text("hi"), finish("stop"), "[DONE]", text(" more"), finish("length")),
			content: "hi"},
		{name: "no [DONE] after finish_reason",
			body:    sseData(text("hi"), finish("stop")),
			content: "hi"},
		{name: "CRLF line ends and comments",
			body:    strings.ReplaceAll(": hello\n\n"+sseData(text("hi"), finish("stop"), "[DONE]"), "\n", "\r\n"),
			content: "hi"},
		{name: "data: without a space",
			body:    "data:" + text("hi") + "\n\ndata:" + finish("stop") + "\n\ndata:[DONE]\n\n",
			content: "hi"},
		{name: "[DONE] in the middle of a call", body: sseData(tc(0, "c0", "a", `{"x":`), "[DONE]"), cut: true},
		{name: "end without [DONE] or finish_reason", body: sseData(text("half")), cut: true},
		{name: "empty stream", body: "", cut: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _ := oddServer(t, "text/event-stream", tt.body)
			rep, me, _ := callOdd(t, cfg, true)
			if tt.cut {
				require.NotNil(t, me, "reply %+v", rep)
				assert.ErrorIs(t, me, ErrStreamCut)
				assert.True(t, me.Retryable)
				return
			}
			require.Nil(t, me)
			assert.Equal(t, tt.content, rep.Message.Content)
			var got []call
			for _, c := range rep.Message.ToolCalls {
				got = append(got, call{c.ID, c.Name, string(c.Arguments)})
			}
			assert.Equal(t, tt.calls, got)
			assert.Equal(t, tt.usage, rep.Usage)
		})
	}
}

// TestRetryAfterOutOfRange has a 429 ask for a wait too long for a
// time.Duration ("1e12" seconds, "Inf"): the conversion overflowed to a
// negative delay, taken for no Retry-After, and the request was retried at
// once. Such a wait is longer than RetryMaxDelay: no retry. "NaN" is
// ignored.
func TestRetryAfterOutOfRange(t *testing.T) {
	tests := []struct {
		name, header, value string
		wantHits            int
	}{
		{"seconds beyond a Duration", "Retry-After", "1e12", 1},
		{"infinite seconds", "Retry-After", "Inf", 1},
		{"milliseconds beyond a Duration", "Retry-After-Ms", "1e300", 1},
		{"NaN is no header", "Retry-After", "NaN", 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hits := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits++
				w.Header().Set(tc.header, tc.value)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusTooManyRequests)
				io.WriteString(w, `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`)
			}))
			t.Cleanup(srv.Close)
			var sleeps []time.Duration
			cfg := Config{BaseURL: srv.URL + "/v1", Model: "m", MaxRetries: 1, Sleep: func(_ context.Context, d time.Duration) error {
				sleeps = append(sleeps, d)
				return nil
			}}
			_, me, _ := callOdd(t, cfg, false)
			require.NotNil(t, me)
			assert.Equal(t, tc.wantHits, hits, "requests")
			for _, d := range sleeps {
				assert.Greater(t, d, time.Duration(0))
			}
		})
	}
}

// TestSecretNeverInOddReplies checks that the API key, echoed by a server
// in the odd replies above, appears nowhere in the error chain.
func TestSecretNeverInOddReplies(t *testing.T) {
	echo := "Bearer " + secretKey
	tests := []struct {
		name, ct, body string
		stream         bool
	}{
		{"200 with an error", "application/json", `{"error":{"message":"bad key ` + echo + `","type":"invalid_request_error"}}`, false},
		{"200 with a string error", "application/json", `{"error":"bad key ` + echo + `"}`, false},
		{"200 HTML", "text/html", "<html>Authorization: " + echo + "</html>", false},
		{"error chunk", "text/event-stream", sseData(`{"id":"x","error":{"message":"bad key ` + echo + `","code":401}}`), true},
		{"whole reply to a stream", "application/json", `{"error":{"message":"bad key ` + echo + `"}}`, true},
		{"stream event not a chunk", "text/event-stream", "data: Authorization: " + echo + "\n\n", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _ := oddServer(t, tc.ct, tc.body)
			cfg.APIKey = secretKey
			_, me, _ := callOdd(t, cfg, tc.stream)
			require.NotNil(t, me)
			assert.Contains(t, me.Message, Redacted)
			for _, s := range errorChainTexts(me) {
				assert.NotContains(t, s, secretKey)
			}
		})
	}
}

// TestGzipReplies pins what a gzip Content-Encoding gives (found sound):
// a body that is not gzip fails naming gzip, not retried; a truncated one
// is retried as a cut body; and MaxReplyBytes bounds the decompressed
// bytes, so a small compressed body cannot expand without bound.
func TestGzipReplies(t *testing.T) {
	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(b)
		zw.Close()
		return buf.Bytes()
	}
	ok := []byte(`{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`)
	bomb := gz(append([]byte(`{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"`), make([]byte, 8<<20)...))
	tests := []struct {
		name      string
		body      []byte
		message   string
		retryable bool
		tooLarge  bool
	}{
		{name: "good", body: gz(ok)},
		{name: "not gzip", body: ok, message: "gzip"},
		{name: "truncated", body: gz(ok)[:20], message: "unexpected EOF", retryable: true},
		{name: "bomb", body: bomb, tooLarge: true},
	}
	for _, tc := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s stream=%v", tc.name, stream), func(t *testing.T) {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Encoding", "gzip")
					w.Header().Set("Content-Type", "application/json")
					w.Write(tc.body)
				}))
				t.Cleanup(srv.Close)
				rep, me, _ := callOdd(t, Config{BaseURL: srv.URL + "/v1", Model: "m", MaxRetries: -1, MaxReplyBytes: 1 << 20}, stream)
				if tc.message == "" && !tc.tooLarge {
					require.Nil(t, me)
					assert.Equal(t, "hi", rep.Message.Content)
					return
				}
				require.NotNil(t, me)
				assert.Contains(t, me.Message, tc.message)
				assert.Equal(t, tc.retryable, me.Retryable)
				_, isTooLarge := errors.AsType[*ReplyTooLargeError](me)
				assert.Equal(t, tc.tooLarge, isTooLarge)
			})
		}
	}
}

// TestContentAsParts has servers send a message content as an array of
// parts, as Mistral's reasoning models do (text parts, and thinking parts
// holding text parts). Before, a reply's text was dropped without an error
// (go-openai keeps parts apart from Content) and a streamed chunk failed to
// decode.
func TestContentAsParts(t *testing.T) {
	parts := `[{"type":"thinking","thinking":[{"type":"text","text":"Let me see. "},{"type":"text","text":"Paris."}]},{"type":"text","text":"The capital "},{"type":"text","text":"is Paris."}]`
	t.Run("reply", func(t *testing.T) {
		cfg, _ := oddServer(t, "application/json", `{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":`+parts+`},"finish_reason":"stop"}]}`)
		rep, me, _ := callOdd(t, cfg, false)
		require.Nil(t, me)
		assert.Equal(t, "The capital is Paris.", rep.Message.Content)
		assert.Equal(t, "Let me see. Paris.", rep.Message.Reasoning)
		assert.Equal(t, llm.FinishStop, rep.FinishReason)
	})
	t.Run("stream", func(t *testing.T) {
		cfg, _ := oddServer(t, "text/event-stream", sseData(
			`{"id":"x","choices":[{"index":0,"delta":{"role":"assistant","content":[{"type":"thinking","thinking":[{"type":"text","text":"Let me see."}]}]}}]}`,
			`{"id":"x","choices":[{"index":0,"delta":{"content":[{"type":"text","text":"Paris"}]}}]}`,
			`{"id":"x","choices":[{"index":0,"delta":{"content":"."},"finish_reason":"stop"}]}`,
			"[DONE]"))
		rep, me, deltas := callOdd(t, cfg, true)
		require.Nil(t, me)
		assert.Equal(t, "Paris.", rep.Message.Content)
		assert.Equal(t, "Let me see.", rep.Message.Reasoning)
		assert.Equal(t, []llm.Delta{{Reasoning: "Let me see."}, {Content: "Paris"}, {Content: "."}}, deltas)
	})
}

// TestArgumentsAsJSON has servers send tool call arguments as a JSON object
// or array instead of a string holding it. Before, the whole reply failed
// to decode (not retried) and the stream chunk too; now the JSON is taken
// as the arguments' text.
func TestArgumentsAsJSON(t *testing.T) {
	call := func(args string) string {
		return `[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":` + args + `}}]`
	}
	for _, args := range []string{`{"city":"Paris","days":[1,2]}`, `[1,2]`} {
		reply := `{"id":"x","choices":[{"index":0,"message":{"role":"assistant","tool_calls":` + call(args) + `},"finish_reason":"tool_calls"}]}`
		tests := []struct {
			name, ct, body string
			stream         bool
		}{
			{"reply", "application/json", reply, false},
			{"whole reply to a stream", "application/json", reply, true},
			{"stream", "text/event-stream", sseData(`{"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"get_weather","arguments":`+args+`}}]}}]}`,
				`{"id":"x","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`, "[DONE]"), true},
		}
		for _, tc := range tests {
			t.Run(tc.name+" "+args, func(t *testing.T) {
				cfg, _ := oddServer(t, tc.ct, tc.body)
				rep, me, _ := callOdd(t, cfg, tc.stream)
				require.Nil(t, me)
				require.Len(t, rep.Message.ToolCalls, 1)
				c := rep.Message.ToolCalls[0]
				assert.Equal(t, "c1", c.ID)
				assert.Equal(t, "get_weather", c.Name)
				assert.JSONEq(t, args, string(c.Arguments))
			})
		}
	}
}

// TestStallEndsAtDeadline pins (found sound) that a server that stalls,
// before its headers or in the middle of a stream, holds a call no longer
// than its context allows, and that the error unwraps to the context's.
func TestStallEndsAtDeadline(t *testing.T) {
	for name, h := range map[string]func(w http.ResponseWriter, r *http.Request){
		"before the headers": func(w http.ResponseWriter, r *http.Request) {},
		"after the headers": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
		},
		"mid-stream": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, ": hi\n\n")
			w.(http.Flusher).Flush()
		},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s stream=%v", name, stream), func(t *testing.T) {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					io.Copy(io.Discard, r.Body)
					h(w, r)
					select {
					case <-r.Context().Done():
					case <-time.After(10 * time.Second):
					}
				}))
				t.Cleanup(srv.Close)
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				defer cancel()
				m := New(Config{BaseURL: srv.URL + "/v1", Model: "m"})
				start := time.Now()
				var err error
				if stream {
					_, err = m.Stream(ctx, userRequest("hi"), nil)
				} else {
					_, err = m.Generate(ctx, userRequest("hi"))
				}
				assert.Less(t, time.Since(start), 2*time.Second)
				require.ErrorIs(t, err, context.DeadlineExceeded)
				me, ok := errors.AsType[*llm.ModelError](err)
				require.True(t, ok)
				assert.False(t, me.Retryable)
			})
		}
	}
}
