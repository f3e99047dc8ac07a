package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/stretchr/testify/assert"
)

// The key and model every test's server expects; the model is one that
// takes a typed answer as output_config.format.
const testKey, testModel = "sk-ant-test-key", "claude-sonnet-4-5"

// request is what a test reads of a Messages request: the parts the
// examples' answers depend on.
type request struct {
	System   []block `json:"system"`
	Messages []struct {
		Role    string  `json:"role"`
		Content []block `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
	OutputConfig struct {
		Format struct {
			Type   string         `json:"type"`
			Schema map[string]any `json:"schema"`
		} `json:"format"`
	} `json:"output_config"`
}

// block is a content block of a request.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"` // a tool result's: a string or text blocks
}

// resultText is the text of a tool_result block.
func (b block) resultText() string {
	var s string
	if json.Unmarshal(b.Content, &s) == nil {
		return s
	}
	var parts []block
	_ = json.Unmarshal(b.Content, &parts)
	var out []string
	for _, p := range parts {
		out = append(out, p.Text)
	}
	return strings.Join(out, "")
}

// variable returns the text of variable name of the request's system
// prompt, "" if it has none.
func (r *request) variable(name string) string {
	var system []string
	for _, b := range r.System {
		system = append(system, b.Text)
	}
	re := regexp.MustCompile(`(?s)<` + regexp.QuoteMeta(name) + `>\n?(.*?)\n?</` + regexp.QuoteMeta(name) + `>`)
	if m := re.FindStringSubmatch(strings.Join(system, "\n")); m != nil {
		return m[1]
	}
	return ""
}

// toolNames are the names of the request's tools, in order.
func (r *request) toolNames() []string {
	var names []string
	for _, t := range r.Tools {
		names = append(names, t.Name)
	}
	return names
}

// reply is an answer of the server: its content blocks, as JSON, and its
// stop reason.
type reply struct{ content, stop string }

// text is a reply of one text block that ends the turn.
func text(s string) reply {
	b, _ := json.Marshal(s)
	return reply{`[{"type":"text","text":` + string(b) + `}]`, "end_turn"}
}

// toolUse is a reply calling one tool with input, a JSON object.
func toolUse(id, name, input string) reply {
	return reply{fmt.Sprintf(`[{"type":"tool_use","id":%q,"name":%q,"input":%s}]`, id, name, input), "tool_use"}
}

// messagesServer is a local server speaking Anthropic's Messages API. It
// checks that each request is one: its path, key and model, and a body
// that decodes into the SDK's MessageNewParams with no unknown field. It
// answers the nth request (from 0) with respond, and keeps the requests.
type messagesServer struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []*request
}

func newMessagesServer(t *testing.T, respond func(n int, r *request) reply) *messagesServer {
	s := &messagesServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		assert.NoError(t, err)
		assert.Equal(t, "/v1/messages", r.URL.Path)
		assert.Contains(t, r.Header.Get("Authorization")+r.Header.Get("X-Api-Key"), testKey, "the API key")
		var p sdk.MessageNewParams
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		assert.NoError(t, dec.Decode(&p), "the body against the SDK's MessageNewParams")
		assert.Equal(t, testModel, string(p.Model), "model")
		var req request
		assert.NoError(t, json.Unmarshal(body, &req), "the body")
		s.mu.Lock()
		n := len(s.reqs)
		s.reqs = append(s.reqs, &req)
		rep := respond(n, &req)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"msg_%d","type":"message","role":"assistant","model":%q,"content":%s,"stop_reason":%q,"stop_sequence":null,"usage":{"input_tokens":300,"output_tokens":20}}`, n, testModel, rep.content, rep.stop)
	}))
	t.Cleanup(s.Close)
	return s
}

// requests returns the requests received so far.
func (s *messagesServer) requests() []*request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*request(nil), s.reqs...)
}

// inTurn answers the nth request with replies[n], and the last one after
// them.
func inTurn(replies ...reply) func(int, *request) reply {
	return func(n int, _ *request) reply { return replies[min(n, len(replies)-1)] }
}

// env sets the variables of the live build's choice for s: Anthropic, on
// this server.
func (s *messagesServer) env(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", testKey)
	t.Setenv("ANTHROPIC_BASE_URL", s.URL)
	t.Setenv("ANTHROPIC_MODEL", testModel)
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
}

// environ is env's, for a process.
func (s *messagesServer) environ() []string {
	return []string{"ANTHROPIC_API_KEY=" + testKey, "ANTHROPIC_BASE_URL=" + s.URL, "ANTHROPIC_MODEL=" + testModel, "OPENAI_API_KEY=", "OPENAI_BASE_URL="}
}
