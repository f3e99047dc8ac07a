package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sync"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/examples/internal/agents"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// replies are the answers of the local server, in Anthropic's Messages
// format: the to-do agent's plan, carried out, and its answer.
var replies = []string{
	`[{"type":"text","text":"I'll add both tasks."},{"type":"tool_use","id":"toolu_01","name":"add_task","input":{"title":"buy groceries"}},{"type":"tool_use","id":"toolu_02","name":"add_task","input":{"title":"call grandma"}}]`,
	`[{"type":"tool_use","id":"toolu_03","name":"complete_task","input":{"title":"buy groceries"}}]`,
	`[{"type":"tool_use","id":"toolu_04","name":"complete_task","input":{"title":"call grandma"}}]`,
	`[{"type":"text","text":"All done: groceries bought and grandma called."}]`,
}

// anthropicServer answers replies in turn, and checks that each request
// is one of Anthropic's Messages API: its path, key and model, and a body
// that decodes into the SDK's request type with no unknown field.
func anthropicServer(t *testing.T, key, model string) *httptest.Server {
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		assert.NoError(t, err)
		assert.Equal(t, "/v1/messages", r.URL.Path)
		assert.Contains(t, r.Header.Get("Authorization")+r.Header.Get("X-Api-Key"), key, "the API key")
		var p sdk.MessageNewParams
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		assert.NoError(t, dec.Decode(&p), "the body against the SDK's MessageNewParams")
		assert.Equal(t, model, string(p.Model), "model")
		mu.Lock()
		i := min(n, len(replies)-1)
		n++
		mu.Unlock()
		stop := "tool_use"
		if i == len(replies)-1 {
			stop = "end_turn"
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"msg_%d","type":"message","role":"assistant","model":%q,"content":%s,"stop_reason":%q,"usage":{"input_tokens":300,"output_tokens":20}}`, i, model, replies[i], stop)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestAnthropicFromEnv runs the live build's choice with ANTHROPIC_API_KEY
// and ANTHROPIC_BASE_URL set: the quickstart's agent on Anthropic's API,
// served by a local server, printed as examples/quickstart prints it.
func TestAnthropicFromEnv(t *testing.T) {
	const key, model = "sk-ant-test-key", "claude-sonnet-4-5"
	srv := anthropicServer(t, key, model)
	t.Setenv("ANTHROPIC_API_KEY", key)
	t.Setenv("ANTHROPIC_BASE_URL", srv.URL)
	t.Setenv("ANTHROPIC_MODEL", model)
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	m, about := fromEnv(agents.TodoScript())
	assert.Equal(t, "model claude-sonnet-4-5 from the environment (Anthropic)", about)
	var out bytes.Buffer
	require.NoError(t, agents.RunTodo(context.Background(), &out, m, about, runtime.Config{MaxSteps: 20, Name: "quickstart"}))
	snapshots.Golden(t, "testdata/TestAnthropicFromEnv.txt", out.Bytes())
}

// TestLiveBuild runs "go run -tags live ." as a user would, with the
// same environment and server: the live build picks Anthropic.
func TestLiveBuild(t *testing.T) {
	const key, model = "sk-ant-test-key", "claude-sonnet-4-5"
	srv := anthropicServer(t, key, model)
	cmd := exec.Command("go", "run", "-tags", "live", ".")
	cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY="+key, "ANTHROPIC_BASE_URL="+srv.URL, "ANTHROPIC_MODEL="+model, "OPENAI_API_KEY=", "OPENAI_BASE_URL=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "stderr: %s", stderr.String())
	want, err := os.ReadFile("testdata/TestAnthropicFromEnv.txt")
	require.NoError(t, err)
	assert.Equal(t, string(want), string(out), "the live build's output against TestAnthropicFromEnv's")
}

// TestNoKeyFallsBack: without ANTHROPIC_API_KEY (nor OpenAI's variables)
// the live build runs on the script, as examples/quickstart does.
func TestNoKeyFallsBack(t *testing.T) {
	for _, v := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"} {
		t.Setenv(v, "")
	}
	script := agents.TodoScript()
	m, about := fromEnv(script)
	assert.Same(t, script, m, "the scripted model")
	assert.Contains(t, about, "scripted model", "the description")
}
