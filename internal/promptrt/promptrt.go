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
	"github.com/reprompt/reprompt/internal/effectsrt"
)

// Manager is the effects manager of a prompt: what package prompt calls
// while the prompt function registers effects, and what the runtime calls
// to run them and keep their memory across steps and checkpoints.
type Manager interface {
	// Begin and End bracket an execution of the prompt function; End
	// reports a misuse of the effect hooks (a *effects.HookOrderError, a
	// *effects.DuplicateKeyError).
	Begin()
	End() error
	// Register registers an effect during an execution.
	Register(pc uintptr, deps effects.Deps, fn effects.Func, opts ...effects.Option)
	// Run runs the effects of phase that are due, in registration order.
	Run(ctx context.Context, phase effects.Phase, s *effects.Step) ([]effects.Ran, error)
	// RunRecovery runs the recovery effects (effects.Recovery) after the
	// provider found a request too long; ok reports that one changed the
	// step.
	RunRecovery(ctx context.Context, s *effects.Step) (ran []effects.Ran, ok bool, err error)
	// Memory and Restore save and restore the dependency memory.
	Memory() effects.Memory
	Restore(mem effects.Memory)
	// Close runs the cleanups still pending.
	Close() error
}

// NewManager returns a new, empty effects manager.
func NewManager() Manager { return effectsrt.NewManager().(Manager) }

var (
	// Execute runs fn as execution number step of p and returns the
	// messages it declared for the first time.
	Execute func(ctx context.Context, p any, step int, fn any) ([]defs.Message, error)
	// Forget makes declared messages count as not added yet.
	Forget func(p any, msgs []defs.Message)
	// MarkMessagesSeen records declared messages as added, by identity.
	MarkMessagesSeen func(p any, ids []string)
	// MessageID returns the identity of a declared message by role and
	// text, as a sub-agent's task message is marked added.
	MessageID func(role defs.Role, text string) string
	// SeenMessages returns the identities of the declared messages added.
	SeenMessages func(p any) []string
	// Registry returns p's definitions.
	Registry func(p any) *defs.Registry
	// Effects returns p's effects manager.
	Effects func(p any) Manager
	// Output returns the typed answer p's last execution declared, or nil.
	Output func(p any) *defs.Output
	// WithAgentRunner returns a context carrying r, a prompt.AgentRunner,
	// for the sub-agent tools DefAgent declares.
	WithAgentRunner func(ctx context.Context, r any) context.Context
	// WithToolCall returns a context carrying r, a prompt.AgentRunner, and
	// the id of the tool call being run (prompt.CallID), in one value.
	WithToolCall func(ctx context.Context, r any, id string) context.Context
)
