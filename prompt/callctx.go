package prompt

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"sync/atomic"
)

// callCtx is the context of a tool call: its id and, when the runtime runs
// the call, the agent runner, in one value. It costs one allocation where
// context.WithValue would cost two for the id (the value and the string
// boxed in an interface) and one more for the runner.
type callCtx struct {
	context.Context
	id      string
	runner  AgentRunner       // nil: the parent's, if any
	answers []json.RawMessage // the user's answers to the call's questions so far (Ask)
	asked   atomic.Int32      // the questions the call asked
}

// Value returns c itself for the call id key (CallID reads its id), c's
// runner for the runner key when it has one, and the parent's value for
// any other key.
func (c *callCtx) Value(key any) any {
	switch key.(type) {
	case callIDKey:
		return c
	case runnerKey:
		if c.runner != nil {
			return c.runner
		}
	}
	return c.Context.Value(key)
}

// String names the context as context.WithValue's contexts do.
func (c *callCtx) String() string {
	return contextName(c.Context) + ".WithCallID(" + strconv.Quote(c.id) + ")"
}

func contextName(c context.Context) string {
	if s, ok := c.(fmt.Stringer); ok {
		return s.String()
	}
	return reflect.TypeOf(c).String()
}

// WithToolCall returns the context a runtime gives a tool call: it carries
// the id of the call (CallID returns it), r, which runs the sub-agents a
// DefAgent tool starts, and the user's answers to the questions the call
// asked before it was run again (Ask returns them in order), in one value.
// A test that calls a tool's function directly may use it too (WithCallID
// when the tool starts no sub-agent and asks nothing). A nil r leaves the
// runner ctx carries, if any.
func WithToolCall(ctx context.Context, r AgentRunner, id string, answers ...json.RawMessage) context.Context {
	return &callCtx{Context: ctx, id: id, runner: r, answers: answers}
}
