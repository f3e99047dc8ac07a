package runtime

import (
	"context"
	"errors"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/internal/core"
	"github.com/reprompt/reprompt/prompt"
)

// c returns the state of r's prompt, which the runtime executes and reads
// (see package internal/core): r.p is its handle.
func (r *Runner) c() *core.Prompt { return (*core.Prompt)(r.p) }

// execute runs execution number step of r's prompt function (stage 1 of "A
// step" in doc.go) and returns the messages it declared for the first time.
// A failure is a *prompt.Error.
func (r *Runner) execute(ctx context.Context, step int) ([]defs.Message, error) {
	return executePrompt(ctx, r.p, step, r.fn)
}

// executePrompt runs fn as execution number step of p: the one place a
// prompt function is called.
func executePrompt(ctx context.Context, p *prompt.Prompt, step int, fn prompt.Func) ([]defs.Message, error) {
	added, err := (*core.Prompt)(p).Execute(ctx, step, func() error { return fn(p) })
	if err != nil {
		return nil, promptError(err)
	}
	return added, nil
}

// promptError makes the *core.ExecError of a failed execution the
// *prompt.Error the runtime reports: a hook misuse names the hook's call
// site, another panic the site of the panic.
func promptError(err error) error {
	var ee *core.ExecError
	if !errors.As(err, &ee) {
		return err
	}
	if ee.Panicked {
		var me *prompt.MisuseError
		if errors.As(ee.Err, &me) {
			return &prompt.Error{Step: ee.Step, Site: me.Site, Err: me}
		}
		return &prompt.Error{Step: ee.Step, Site: ee.Site, Panicked: true, Err: ee.Err}
	}
	return &prompt.Error{Step: ee.Step, Site: ee.Site, Err: ee.Err}
}
