package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
)

// badArgsModel calls tool "add" with arguments that are not JSON, then
// answers (or fails, when fail is set) once it has seen the result.
type badArgsModel struct {
	args []byte
	fail bool

	mu       sync.Mutex
	requests [][]defs.Message
}

var errModelDown = errors.New("model down")

func (m *badArgsModel) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests = append(m.requests, append([]defs.Message(nil), req.Messages...))
	for _, msg := range req.Messages {
		if msg.Role == defs.RoleTool {
			if m.fail {
				return nil, errModelDown
			}
			return &llm.Reply{Message: defs.AssistantMessage("done")}, nil
		}
	}
	return &llm.Reply{Message: defs.Message{Role: defs.RoleAssistant,
		ToolCalls: []defs.ToolCall{{ID: "c1", Name: "add", Arguments: m.args}}}}, nil
}

// badArgsPrompt declares tool "add", through prompt.DefTool or, when raw,
// through prompt.DefSchemaTool with a schema that accepts any object.
func badArgsPrompt(calls *int, raw bool) prompt.Func {
	return func(p *prompt.Prompt) error {
		if raw {
			p.DefSchemaTool("add", "add", json.RawMessage(`{"type":"object"}`), func(ctx context.Context, args json.RawMessage) (string, error) {
				*calls++
				return "ran with " + string(args), nil
			})
		} else {
			prompt.DefTool(p, "add", "add", func(ctx context.Context, a struct {
				A int    `json:"a"`
				S string `json:"s"`
			}) (int, error) {
				*calls++
				return a.A + 1, nil
			})
		}
		p.User("go")
		return nil
	}
}

// TestInvalidToolArgumentsWithStore checks that tool-call arguments that are
// not JSON, from a model other than the OpenAI adapter, become an error
// result for the model while a store is set, and that the checkpoint keeps
// them byte for byte across a Resume.
func TestInvalidToolArgumentsWithStore(t *testing.T) {
	for _, tc := range []struct {
		args string
		raw  bool
	}{
		{`{"a":`, false},
		{"{\"a\": \xff}", false},
		{`{"a": 1, "s": "<&>"}`, false},
		{`{"a":`, true},
		{"", true},
	} {
		args := tc.args
		t.Run(fmt.Sprintf("%q/raw=%t", args, tc.raw), func(t *testing.T) {
			ctx := context.Background()
			store := session.NewMemory()
			cfg := runtime.Config{Store: store, SessionID: "bad-args"}
			calls := 0
			first := &badArgsModel{args: []byte(args), fail: true}
			_, err := runtime.Run(ctx, first, badArgsPrompt(&calls, tc.raw), cfg)
			require.ErrorIs(t, err, errModelDown, "the run must go on to the step after the tool call")
			if json.Valid([]byte(args)) || args == "" {
				assert.Equal(t, 1, calls, "valid arguments run the tool")
			} else {
				assert.Zero(t, calls, "the tool must not run on arguments that are not JSON")
				require.Len(t, first.requests, 2)
				last := first.requests[1]
				res := last[len(last)-1]
				assert.Equal(t, defs.RoleTool, res.Role)
				assert.True(t, res.IsError, "the model must get an error result")
				assert.Contains(t, res.Content, "not valid JSON")
			}

			cp, err := store.Latest(ctx, "bad-args")
			require.NoError(t, err)
			require.GreaterOrEqual(t, len(cp.Transcript), 2)
			assert.Equal(t, []byte(args), []byte(cp.Transcript[1].ToolCalls[0].Arguments), "stored arguments")

			second := &badArgsModel{args: []byte(args)}
			r, err := runtime.Resume(ctx, second, badArgsPrompt(&calls, tc.raw), cfg)
			require.NoError(t, err)
			got, err := r.Run(ctx)
			require.NoError(t, err)
			require.NotEmpty(t, second.requests)
			sent := second.requests[0]
			require.GreaterOrEqual(t, len(sent), 3)
			assert.Empty(t, cmp.Diff(first.requests[1], sent), "request after Resume differs from the one before (-want +got)")
			assert.Equal(t, []byte(args), []byte(got.Transcript[1].ToolCalls[0].Arguments), "arguments after Resume")
		})
	}
}
