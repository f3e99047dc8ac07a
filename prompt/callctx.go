package prompt

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
)

// callCtx is the context of a tool call: its id and, when the runtime runs
// the call, the agent runner, in one value. It costs one allocation where
// context.WithValue would cost two for the id (the value and the string
// boxed in an interface) and one more for the runner.
type callCtx struct {
	context.Context
	id     string
	runner AgentRunner // nil: the parent's, if any
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

// withToolCall returns a context carrying the id of the tool call being run
// and r, the runner of the sub-agents it may start. The runtime sets one for
// every tool call (through internal/promptrt).
func withToolCall(ctx context.Context, r AgentRunner, id string) context.Context {
	return &callCtx{Context: ctx, id: id, runner: r}
}
