package prompt

import (
	"context"
	"errors"
	"reflect"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/internal/core"
)

// What the runtime reaches through internal/core, for this package's
// tests. Execute reports failures as package runtime does (its
// promptError).

func (p *Prompt) Execute(step int, fn Func) ([]defs.Message, error) {
	added, err := p.c().Execute(context.Background(), step, func() error { return fn(p) })
	if err == nil {
		return added, nil
	}
	var ee *core.ExecError
	if !errors.As(err, &ee) {
		return added, err
	}
	var me *MisuseError
	switch {
	case ee.Panicked && errors.As(ee.Err, &me):
		return nil, &Error{Step: ee.Step, Site: me.Site, Err: me}
	case ee.Panicked:
		return nil, &Error{Step: ee.Step, Site: ee.Site, Panicked: true, Err: ee.Err}
	}
	return nil, &Error{Step: ee.Step, Site: ee.Site, Err: ee.Err}
}
func (p *Prompt) Forget(msgs []defs.Message)    { p.c().Forget(msgs) }
func (p *Prompt) MarkMessagesSeen(ids []string) { p.c().MarkMessagesSeen(ids) }
func (p *Prompt) SeenMessages() []string        { return p.c().SeenMessages() }
func (p *Prompt) Registry() *defs.Registry      { return p.c().Registry() }
func (p *Prompt) Effects() *effects.Manager     { return p.c().Effects() }

func WithAgentRunner(ctx context.Context, r AgentRunner) context.Context {
	return WithToolCall(ctx, r, "")
}

// MessageID names a message by role and text, as checkpoints written before
// messages were identified by position name them.
var MessageID = core.MessageID

func IsArgumentsError(err error) bool {
	var ae *ArgumentsError
	return errors.As(err, &ae)
}

// ToolOptionFields is the number of fields of toolOptions: sameTool
// compares each option that makes a tool different, and a new one must be
// compared there too.
var ToolOptionFields = reflect.TypeFor[toolOptions]().NumField()

func (p *Prompt) Output() *defs.Output { return p.c().Output() }
