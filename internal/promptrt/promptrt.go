// Package promptrt is how the runtime drives a prompt.Prompt: what it needs
// of one beyond the hooks a prompt author uses, kept out of package
// prompt's API. Package prompt sets the functions when it is initialised.
// p is always a *prompt.Prompt and fn a prompt.Func, types this package
// cannot name: package prompt imports it.
package promptrt

import (
	"context"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
)

var (
	// Execute runs fn as execution number step of p and returns the
	// messages it declared for the first time.
	Execute func(p any, step int, fn any) ([]defs.Message, error)
	// Forget makes declared messages count as not added yet.
	Forget func(p any, msgs []defs.Message)
	// MarkMessagesSeen records declared messages as added, by identity.
	MarkMessagesSeen func(p any, ids []string)
	// SeenMessages returns the identities of the declared messages added.
	SeenMessages func(p any) []string
	// Registry returns p's definitions.
	Registry func(p any) *defs.Registry
	// Effects returns p's effects manager.
	Effects func(p any) *effects.Manager
	// Output returns the typed answer p's last execution declared, or nil.
	Output func(p any) *defs.Output
	// WithAgentRunner returns a context carrying r, a prompt.AgentRunner,
	// for the sub-agent tools DefAgent declares.
	WithAgentRunner func(ctx context.Context, r any) context.Context
)
