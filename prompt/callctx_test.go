package prompt_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/prompt"
)

type ctxKey string

// The context of a tool call carries its id and the agent runner in one
// value; it must read as the chain of context.WithValue it replaces.
func TestToolCallContext(t *testing.T) {
	base := context.WithValue(context.Background(), ctxKey("k"), "v")
	r := &fakeRunner{}
	ctx := prompt.WithToolCall(base, r, "call_7")
	assert.Equal(t, "call_7", prompt.CallID(ctx))
	assert.Equal(t, "v", ctx.Value(ctxKey("k")), "other keys are the parent's")
	assert.Equal(t, "", prompt.CallID(base))

	// The runner it carries runs a sub-agent tool.
	tool := declare(t, func(p *prompt.Prompt) error {
		p.DefAgent("researcher", "Researches.", func(*prompt.Prompt) error { return nil })
		return nil
	}, "researcher")
	out, err := tool.Call(ctx, json.RawMessage(`{"task":"find x"}`))
	require.NoError(t, err)
	assert.Equal(t, "answer", out)
	assert.Equal(t, "researcher", r.name)

	// WithCallID inside it changes the id and keeps the runner; without a
	// runner of its own, a tool call context keeps its parent's.
	inner := prompt.WithCallID(ctx, "call_8")
	assert.Equal(t, "call_8", prompt.CallID(inner))
	r.name = ""
	_, err = tool.Call(inner, json.RawMessage(`{"task":"find y"}`))
	require.NoError(t, err)
	assert.Equal(t, "find y", r.task)
	r2 := &fakeRunner{}
	_, err = tool.Call(prompt.WithToolCall(prompt.WithAgentRunner(base, r2), nil, "c"), json.RawMessage(`{"task":"z"}`))
	require.NoError(t, err)
	assert.Equal(t, "z", r2.task)
	_, err = tool.Call(prompt.WithCallID(base, "c"), json.RawMessage(`{"task":"z"}`))
	assert.ErrorIs(t, err, prompt.ErrNoAgentRunner)

	// Cancellation and deadlines pass through it both ways.
	parent, cancel := context.WithCancel(base)
	child, cancelChild := context.WithTimeout(prompt.WithCallID(parent, "c"), time.Hour)
	defer cancelChild()
	cancel()
	select {
	case <-child.Done():
	case <-time.After(5 * time.Second):
		require.FailNow(t, "a context under a call context was not cancelled with its parent")
	}
	assert.ErrorIs(t, child.Err(), context.Canceled)
	assert.Equal(t, "c", prompt.CallID(child))

	assert.Equal(t, `context.Background.WithValue(prompt_test.ctxKey, v).WithCallID("call_7")`,
		ctx.(interface{ String() string }).String())
}

var ctxSink context.Context

func TestWithCallIDAllocatesOnce(t *testing.T) {
	ctx := context.Background()
	n := testing.AllocsPerRun(100, func() {
		ctxSink = prompt.WithCallID(ctx, "call_1") // kept: it escapes, as a tool's context does
		// A bool, not the string, goes into the interface: no allocation.
		require.True(t, prompt.CallID(ctxSink) == "call_1", "CallID of the context WithCallID returned")
	})
	assert.Equal(t, 1.0, n)
}
