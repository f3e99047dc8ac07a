package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/internal/mockllm"
	"github.com/reprompt/reprompt/llm"
)

// The tests in this file run the adapter against @dwmkerr/mock-llm, an
// OpenAI-compatible mock server from npm that nobody here wrote. The
// script .ci/mockllm.sh installs it (outside the clone) and prints the
// variable that names it:
//
//	eval "$(bash .ci/mockllm.sh)"   # exports REPROMPT_MOCKLLM
//	go test ./providers/openai -run MockLLM -v
//
// Without REPROMPT_MOCKLLM the tests skip, unless REPROMPT_MOCKLLM_REQUIRED
// is set (CI sets it), which turns the skip into a failure.
//
// What mock-llm cannot do, and where the adapter's own httptest server
// covers it instead:
//   - it parses every scripted response as JSON, so it cannot send an HTML
//     or empty error body (TestNonOpenAIErrorBodies);
//   - it streams only a reply's text: a streamed reply with tool calls makes
//     it fail with a 500 TypeError (TestMockLLMStreamedToolCalls below shows
//     it; TestStreamedToolCallsWithoutIDs and TestOpenAPIStream cover them);
//   - it sends every streamed error as a 200 stream with one error event,
//     so a streamed error keeps only the status its body names or its
//     error code implies (429 for rate_limit_exceeded), or 502 for a bare
//     string naming none;
//   - it always finishes a stream, so it cannot end one early
//     (TestOpenAPIStreamCut).

// mockLLM is a mock-llm server and where the current rules began in its
// log of requests.
type mockLLM struct {
	*mockllm.Server
	mu   sync.Mutex
	mark int // index in Output where the current rules began
}

// startMockLLM starts mock-llm for the test (see internal/mockllm).
func startMockLLM(t *testing.T) *mockLLM {
	t.Helper()
	return &mockLLM{Server: mockllm.Start(t)}
}

// script replaces the mock's rules with one rule answering every chat
// request with status and content, and resets its request log.
func (m *mockLLM) script(t *testing.T, status int, content string) {
	t.Helper()
	m.Configure(t, map[string]any{
		"streaming": map[string]any{"chunkSize": 5, "chunkIntervalMs": 1},
		"rules":     []mockllm.Rule{{Path: "/v1/chat/completions", Method: "POST", Response: mockllm.Response{Status: status, Content: content}}},
	})
	m.mu.Lock()
	m.mark = len(m.Output())
	m.mu.Unlock()
}

// attempts returns how many chat requests the mock logged since the last
// script. A request to /health goes last: mock-llm logs requests in the
// order they arrive, so once its line is read every earlier one is.
func (m *mockLLM) attempts(t *testing.T, path string) int {
	t.Helper()
	m.mu.Lock()
	from := m.mark
	m.mu.Unlock()
	resp, err := http.Get(m.URL + "/health")
	require.NoError(t, err)
	resp.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		lines := m.Output()[from:]
		for i, l := range lines {
			if l == "GET /health" {
				n := 0
				for _, l := range lines[:i] {
					if l == "POST "+path {
						n++
					}
				}
				m.mu.Lock()
				m.mark = from + i + 1
				m.mu.Unlock()
				return n
			}
		}
		require.False(t, time.Now().After(deadline), "mock-llm did not log the /health request: %q", lines)
		time.Sleep(5 * time.Millisecond)
	}
}

// model returns an adapter aimed at the mock that does not wait between
// attempts.
func (m *mockLLM) model(baseURL string) *Model {
	return New(Config{
		APIKey:  "sk-mock",
		BaseURL: baseURL,
		Model:   "gpt-4.1",
		Sleep:   func(ctx context.Context, d time.Duration) error { return ctx.Err() },
	})
}

func openAIError(message, typ, code string) string {
	return fmt.Sprintf(`{"error":{"message":%q,"type":%q,"param":null,"code":%q}}`, message, typ, code)
}

// TestMockLLMReplies checks replies of shapes OpenAI never sends: tool
// calls without ids or types, several in one reply, no usage, no index.
func TestMockLLMReplies(t *testing.T) {
	mock := startMockLLM(t)
	m := mock.model(mock.URL + "/v1")
	tests := []struct {
		name    string
		content string
		want    []defs.ToolCall // ids are checked apart
		text    string
		finish  llm.FinishReason
	}{
		{
			name:    "tool call without id or type",
			content: `{"choices":[{"message":{"role":"assistant","tool_calls":[{"function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}]}`,
			want:    []defs.ToolCall{{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}},
			finish:  llm.FinishToolCalls,
		},
		{
			name:    "parallel calls without ids, one without arguments",
			content: `{"choices":[{"message":{"tool_calls":[{"function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},{"function":{"name":"get_weather","arguments":"{\"city\":\"Tokyo\"}"}},{"function":{"name":"get_time"}}]}}]}`,
			want: []defs.ToolCall{
				{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
				{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Tokyo"}`)},
				{Name: "get_time", Arguments: json.RawMessage(`{}`)},
			},
			finish: llm.FinishToolCalls,
		},
		{
			name:    "echo of the last message",
			content: `{"id":"chatcmpl-{{timestamp}}","object":"chat.completion","model":"{{jmes request body.model}}","choices":[{"message":{"role":"assistant","content":"{{jmes request body.messages[-1].content}}"},"finish_reason":"stop"}]}`,
			text:    "What is the weather?",
			finish:  llm.FinishStop,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mock.script(t, 200, tt.content)
			reply, err := m.Generate(context.Background(), &llm.Request{
				System:   "You are terse.",
				Messages: []defs.Message{defs.UserMessage("What is the weather?")},
				Tools:    []llm.ToolSpec{weatherTool},
			})
			require.NoError(t, err)
			assert.Equal(t, tt.text, reply.Message.Content)
			assert.Equal(t, tt.finish, reply.FinishReason)
			require.Len(t, reply.Message.ToolCalls, len(tt.want))
			ids := map[string]bool{}
			for i, c := range reply.Message.ToolCalls {
				assert.True(t, strings.HasPrefix(c.ID, "call_"), "call %d has id %q", i, c.ID)
				ids[c.ID] = true
				assert.Equal(t, tt.want[i].Name, c.Name)
				assert.JSONEq(t, string(tt.want[i].Arguments), string(c.Arguments))
			}
			assert.Len(t, ids, len(tt.want), "ids are distinct")
			assert.Equal(t, 1, mock.attempts(t, "/v1/chat/completions"))
		})
	}
}

// TestMockLLMStreamedText streams a reply in small chunks.
func TestMockLLMStreamedText(t *testing.T) {
	mock := startMockLLM(t)
	m := mock.model(mock.URL + "/v1")
	const text = "The capital of France is Paris, on the Seine."
	mock.script(t, 200, fmt.Sprintf(`{"id":"c1","object":"chat.completion","created":1,"model":"gpt-4.1","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}]}`, text))
	var deltas []string
	reply, err := m.Stream(context.Background(), userRequest("q"), func(d llm.Delta) { deltas = append(deltas, d.Content) })
	require.NoError(t, err)
	assert.Equal(t, text, reply.Message.Content)
	assert.Equal(t, llm.FinishStop, reply.FinishReason)
	assert.Equal(t, text, strings.Join(deltas, ""))
	assert.Len(t, deltas, (len(text)+4)/5, "one delta per 5-character chunk")
	assert.Equal(t, llm.Usage{}, reply.Usage, "mock-llm sends no usage chunk")
	assert.Equal(t, 1, mock.attempts(t, "/v1/chat/completions"))
}

// TestMockLLMErrors scripts 429, 500, 502 and 503 with OpenAI-shaped and
// string bodies, for Generate and Stream, and checks the error and the
// attempts the server saw.
func TestMockLLMErrors(t *testing.T) {
	mock := startMockLLM(t)
	retries := 1 + DefaultMaxRetries
	type want struct {
		status    int
		retryable bool
		message   string
		attempts  int
	}
	tests := []struct {
		name     string
		status   int
		content  string
		generate want
		// stream: mock-llm sends every streamed error as a 200 stream
		// with the body as its one event, so only the status the body
		// names (or its error code implies) survives.
		stream want
	}{
		{
			name: "429 OpenAI-shaped rate limit", status: 429,
			content:  openAIError("Rate limit reached for requests", "requests", "rate_limit_exceeded"),
			generate: want{429, true, "Rate limit reached for requests", retries},
			stream:   want{429, true, "Rate limit reached for requests", retries},
		},
		{
			name: "429 OpenAI-shaped quota", status: 429,
			content:  openAIError("You exceeded your current quota.", "insufficient_quota", "insufficient_quota"),
			generate: want{429, false, "You exceeded your current quota.", 1},
			stream:   want{429, false, "You exceeded your current quota.", 1},
		},
		{
			name: "500 OpenAI-shaped", status: 500,
			content:  openAIError("The server had an error while processing your request.", "server_error", ""),
			generate: want{500, true, "The server had an error", retries},
			stream:   want{500, true, "The server had an error", retries},
		},
		{
			name: "503 string error", status: 503,
			content:  `{"error":"Service Unavailable"}`,
			generate: want{503, true, "Service Unavailable", retries},
			stream:   want{503, true, "Service Unavailable", retries},
		},
		{
			name: "429 string error", status: 429,
			content:  `{"error":"Too Many Requests"}`,
			generate: want{429, true, "Too Many Requests", retries},
			stream:   want{429, true, "Too Many Requests", retries},
		},
		{
			name: "502 body that is a JSON string of HTML", status: 502,
			content:  `"<html><body>502 Bad Gateway</body></html>"`,
			generate: want{502, true, "502 Bad Gateway", retries},
			// Streamed, the mock sends the string as a data event: no
			// chunk is a string, so it is an error event, whose text
			// names its status.
			stream: want{502, true, "502 Bad Gateway", retries},
		},
		{
			name: "400 string error", status: 400,
			content:  `{"error":"model not loaded"}`,
			generate: want{400, false, "model not loaded", 1},
			stream:   want{0, false, "model not loaded", 1},
		},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%t", tt.name, stream), func(t *testing.T) {
				mock.script(t, tt.status, tt.content)
				m := mock.model(mock.URL + "/v1")
				w := tt.generate
				var err error
				if stream {
					w = tt.stream
					_, err = m.Stream(context.Background(), userRequest("q"), nil)
				} else {
					_, err = m.Generate(context.Background(), userRequest("q"))
				}
				var me *llm.ModelError
				require.ErrorAs(t, err, &me)
				assert.Equal(t, w.status, me.StatusCode, "status")
				assert.Equal(t, w.retryable, me.Retryable, "retryable")
				assert.Contains(t, me.Message, w.message)
				assert.NotContains(t, me.Error(), "unexpected end of JSON input")
				assert.Equal(t, w.attempts, mock.attempts(t, "/v1/chat/completions"), "attempts")
			})
		}
	}
}

// TestMockLLMBaseURLWithoutV1 aims the adapter at the mock's root: its 404
// (express's, not OpenAI's) keeps its status, is not retried, and says
// what to check.
func TestMockLLMBaseURLWithoutV1(t *testing.T) {
	mock := startMockLLM(t)
	mock.script(t, 200, `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}`)
	for _, stream := range []bool{false, true} {
		m := mock.model(mock.URL)
		var err error
		if stream {
			_, err = m.Stream(context.Background(), userRequest("q"), nil)
		} else {
			_, err = m.Generate(context.Background(), userRequest("q"))
		}
		var me *llm.ModelError
		require.ErrorAs(t, err, &me)
		assert.Equal(t, http.StatusNotFound, me.StatusCode)
		assert.False(t, me.Retryable)
		assert.Contains(t, me.Message, "Cannot POST /chat/completions")
		assert.Contains(t, me.Message, "/v1")
		assert.Equal(t, 1, mock.attempts(t, "/chat/completions"))
	}
}

// TestMockLLMStreamedToolCalls shows where mock-llm itself is wrong: it
// streams only text, and a reply with tool calls (no content) makes it fail
// with a 500 TypeError. The adapter reports that 500 as a retryable server
// error and retries it; TestStreamedToolCallsWithoutIDs covers streamed
// tool calls with the adapter's own server.
func TestMockLLMStreamedToolCalls(t *testing.T) {
	mock := startMockLLM(t)
	mock.script(t, 200, `{"choices":[{"message":{"tool_calls":[{"function":{"name":"get_weather","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`)
	_, err := mock.model(mock.URL+"/v1").Stream(context.Background(), userRequest("q"), nil)
	var me *llm.ModelError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, 500, me.StatusCode)
	assert.True(t, me.Retryable)
	assert.Contains(t, me.Message, "TypeError")
	assert.Equal(t, 1+DefaultMaxRetries, mock.attempts(t, "/v1/chat/completions"))
}

// TestStreamedToolCallsWithoutIDs streams what mock-llm cannot: parallel
// tool calls without ids or types, the way some OpenAI-compatible servers
// send them (every fragment at index 0 or with no index).
func TestStreamedToolCallsWithoutIDs(t *testing.T) {
	chunk := func(delta, finish string) string {
		return `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}`
	}
	srv := newFakeServer(t, reply{events: []string{
		chunk(`{"role":"assistant","tool_calls":[{"index":0,"function":{"name":"get_weather","arguments":"{\"city\":"}}]}`, "null"),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}`, "null"),
		chunk(`{"tool_calls":[{"index":1,"function":{"name":"get_time","arguments":"{}"}}]}`, "null"),
		chunk(`{}`, `"tool_calls"`),
		"[DONE]",
	}})
	reply, err := New(srv.config("gpt-4.1", nil)).Stream(context.Background(), userRequest("q"), nil)
	require.NoError(t, err)
	require.Len(t, reply.Message.ToolCalls, 2)
	a, b := reply.Message.ToolCalls[0], reply.Message.ToolCalls[1]
	assert.Equal(t, "get_weather", a.Name)
	assert.JSONEq(t, `{"city":"Paris"}`, string(a.Arguments))
	assert.Equal(t, "get_time", b.Name)
	assert.NotEmpty(t, a.ID)
	assert.NotEqual(t, a.ID, b.ID)
	assert.Equal(t, llm.FinishToolCalls, reply.FinishReason)
	assert.Equal(t, 1, srv.hits())
}
