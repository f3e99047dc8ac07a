package prompt

import (
	"context"
	"errors"
	"reflect"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/internal/promptrt"
)

// What the runtime reaches through internal/promptrt, for this package's
// tests.

func (p *Prompt) Execute(step int, fn Func) ([]defs.Message, error) {
	return p.execute(context.Background(), step, fn)
}
func (p *Prompt) Forget(msgs []defs.Message)    { p.forget(msgs) }
func (p *Prompt) MarkMessagesSeen(ids []string) { p.markMessagesSeen(ids) }
func (p *Prompt) SeenMessages() []string        { return p.seenMessages() }
func (p *Prompt) Registry() *defs.Registry      { return p.reg }
func (p *Prompt) Effects() promptrt.Manager     { return p.eff }

func WithAgentRunner(ctx context.Context, r AgentRunner) context.Context {
	return withAgentRunner(ctx, r)
}

// MessageID is messageID: checkpoints written before messages were
// identified by call site name them so.
var MessageID = messageID

func IsArgumentsError(err error) bool {
	var ae *ArgumentsError
	return errors.As(err, &ae)
}

func WithToolCall(ctx context.Context, r AgentRunner, id string) context.Context {
	return withToolCall(ctx, r, id)
}

// ToolOptionFields is the number of fields of toolOptions: sameTool
// compares each option that makes a tool different, and a new one must be
// compared there too.
var ToolOptionFields = reflect.TypeFor[toolOptions]().NumField()
