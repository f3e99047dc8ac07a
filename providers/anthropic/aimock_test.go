package anthropic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/internal/mockllm"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/providers/anthropic"
	"github.com/reprompt/reprompt/runtime"
)

// The variables .ci/aimock.sh sets.
const (
	envAimock         = "REPROMPT_AIMOCK"          // the llmock command of @copilotkit/aimock
	envAimockRequired = "REPROMPT_AIMOCK_REQUIRED" // fail, not skip, without it
)

// startAimock starts @copilotkit/aimock's llmock, a mock of LLM APIs from
// npm that nobody here wrote, on a free loopback port with fixtures (its
// JSON fixture file's "fixtures" array), stopped when the test ends, and
// returns its URL. Without REPROMPT_AIMOCK it skips the test, and fails it
// when REPROMPT_AIMOCK_REQUIRED is set (as CI sets it).
func startAimock(t *testing.T, fixtures ...map[string]any) string {
	t.Helper()
	bin := os.Getenv(envAimock)
	if bin == "" {
		require.Empty(t, os.Getenv(envAimockRequired), "%s is set but %s is not: run eval \"$(bash .ci/aimock.sh)\" first", envAimockRequired, envAimock)
		t.Skipf("skipping: %s is not set; run eval \"$(bash .ci/aimock.sh)\" to install @copilotkit/aimock and run this test", envAimock)
	}
	port := mockllm.FreePort(t)
	dir := t.TempDir()
	data, err := json.Marshal(map[string]any{"fixtures": fixtures})
	require.NoError(t, err)
	file := filepath.Join(dir, "fixtures.json")
	require.NoError(t, os.WriteFile(file, data, 0o644))
	// --strict: a request no fixture matches fails instead of getting a
	// default answer.
	cmd := exec.Command(bin, "-p", strconv.Itoa(port), "-h", "127.0.0.1", "-f", file, "--strict", "--log-level", "warn")
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start(), "starting %s", bin)
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	mockllm.WaitHealthy(t, "aimock", url, done, out.String)
	return url
}

// TestAimockAgent runs a runtime agent with a tool through the adapter
// against aimock's Messages API, streamed and not: the model asks for
// the weather with a tool call, the tool runs, and the model answers
// from its result, which aimock matches by the tool_use id the adapter
// sends back.
func TestAimockAgent(t *testing.T) {
	url := startAimock(t,
		// First the answer to the tool's result: the first fixture that
		// matches answers, and the user's words still match the other.
		map[string]any{
			"match":    map[string]any{"toolCallId": "toolu_01Paris"},
			"response": map[string]any{"content": "It is 18°C in Paris."},
		},
		map[string]any{
			"match":    map[string]any{"userMessage": "Weather in Paris?"},
			"response": map[string]any{"content": "Let me check.", "toolCalls": []map[string]any{{"id": "toolu_01Paris", "name": "get_weather", "arguments": `{"city":"Paris"}`}}},
		},
	)
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%t", stream), func(t *testing.T) {
			m := anthropic.New(anthropic.Config{BaseURL: url, APIKey: testKey, MaxRetries: -1})
			var mu sync.Mutex
			var calls []string
			agent := func(p *prompt.Prompt) error {
				p.DefSystem("role", "You report the weather.")
				prompt.DefTool(p, "get_weather", "The weather in a city.", func(ctx context.Context, a cityArgs) (string, error) {
					mu.Lock()
					calls = append(calls, a.City)
					mu.Unlock()
					return "18°C", nil
				})
				return nil
			}
			cfg := runtime.Config{MaxSteps: 4}
			var text string
			if stream {
				cfg.OnDelta = func(d llm.Delta) { text += d.Content }
			}
			res, err := runtime.New(m, agent, cfg).Continue(context.Background(), "Weather in Paris?")
			require.NoError(t, err)
			assert.Equal(t, "It is 18°C in Paris.", res.Text)
			assert.Equal(t, []string{"Paris"}, calls, "tool calls run")
			require.Len(t, res.Steps, 2, "steps")
			assert.Equal(t, "Let me check.", res.Steps[0].Reply.Message.Content, "the first reply's text")
			assert.Equal(t, llm.FinishToolCalls, res.Steps[0].Reply.FinishReason)
			assert.Equal(t, llm.FinishStop, res.Steps[1].Reply.FinishReason)
			if stream {
				assert.Equal(t, "Let me check.It is 18°C in Paris.", text, "streamed text")
			}
		})
	}
}

// TestAimockErrors maps aimock's errors in Anthropic's format: an
// overloaded server (529) and a rate limit (429, with retry-after) are
// retryable; a bad request (400) is not.
func TestAimockErrors(t *testing.T) {
	errFixture := func(msg string, status int, typ string) map[string]any {
		return map[string]any{
			"match":    map[string]any{"userMessage": msg},
			"response": map[string]any{"status": status, "retryAfter": 7, "error": map[string]any{"type": typ, "message": msg + " (from aimock)"}},
		}
	}
	url := startAimock(t,
		errFixture("overloaded", 529, "overloaded_error"),
		errFixture("rate limited", 429, "rate_limit_error"),
		errFixture("bad", 400, "invalid_request_error"),
	)
	for _, tc := range []struct {
		msg       string
		status    int
		retryable bool
	}{
		{"overloaded", 529, true},
		{"rate limited", 429, true},
		{"bad", 400, false},
	} {
		t.Run(tc.msg, func(t *testing.T) {
			var slept []time.Duration
			m := anthropic.New(anthropic.Config{BaseURL: url, APIKey: testKey, MaxRetries: 1,
				Sleep: func(ctx context.Context, d time.Duration) error { slept = append(slept, d); return nil }})
			_, err := m.Generate(context.Background(), &llm.Request{Messages: []defs.Message{defs.UserMessage(tc.msg)}})
			var me *llm.ModelError
			require.ErrorAs(t, err, &me)
			assert.Equal(t, tc.status, me.StatusCode, "status")
			assert.Equal(t, tc.retryable, me.Retryable, "retryable")
			assert.Contains(t, me.Message, tc.msg+" (from aimock)", "the server's message")
			if tc.retryable {
				require.Len(t, slept, 1, "one retry")
				if tc.status == 429 {
					assert.Equal(t, 7*time.Second, slept[0], "the delay retry-after asks for")
				}
			} else {
				assert.Empty(t, slept, "no retry")
			}
		})
	}
}
