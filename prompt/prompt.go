package prompt

import (
	"context"
	"errors"
	"fmt"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/internal/callsite"
	"github.com/reprompt/reprompt/internal/core"
	"github.com/reprompt/reprompt/state"
)

// Func is a prompt function. It is executed before every step; a returned
// error ends the run.
type Func func(p *Prompt) error

// Prompt is the handle a prompt function declares through. Its hooks may be
// called only while the prompt function executes; calling one from a tool or
// an effect panics with a *MisuseError. The Setter returned by State and the
// handles returned by the Def methods may be used at any time.
//
// A Prompt is the state of its prompt across executions (definitions, state,
// effects, declared messages), which the runtime executes; it is defined
// from the runtime's internal type, and has the methods below only.
type Prompt core.Prompt

// c returns the state behind p.
func (p *Prompt) c() *core.Prompt { return (*core.Prompt)(p) }

// New returns a Prompt with empty definitions, state and effects. input is
// the task a sub-agent was given ("" for a top-level prompt).
func New(input string) *Prompt { return (*Prompt)(core.New(input)) }

// Store returns the prompt's state.
func (p *Prompt) Store() *state.Store { return p.c().Store() }

// Step returns the number of the step being prepared, from 0. It may be
// called from any goroutine.
func (p *Prompt) Step() int { return p.c().Step() }

// Input returns the task given to a sub-agent, or "" for a top-level prompt.
func (p *Prompt) Input() string { return p.c().Input() }

// Turn is a turn of a conversation: a run goes on with the user's next
// message (runtime.Runner.Continue) as a new turn.
type Turn struct {
	// Number counts the turns from 0: the run's first turn is 0, and each
	// message that continues a finished run starts the next.
	Number int
	// Message is the user message that started the turn; "" for a first
	// turn started without one (the prompt declared its own).
	Message string
}

// Turn returns the turn of the conversation this execution belongs to, so
// that a prompt function can declare what a turn needs (a definition for
// the question asked, say). The turn's message is in the transcript
// already: the prompt function need not declare it. Turn is a hook.
func (p *Prompt) Turn() Turn {
	p.check("Turn")
	n, msg := p.c().Turn()
	return Turn{Number: n, Message: msg}
}

// Error is a prompt function that failed: it returned an error, panicked, or
// misused a hook.
type Error struct {
	Step int
	// Site is where the prompt function panicked or misused a hook (for
	// effects registered out of order, the effect's call site with its
	// callers); empty when it returned an error.
	Site string
	// Panicked reports a panic that was not a hook misuse.
	Panicked bool
	Err      error
}

func (e *Error) Error() string {
	switch {
	case e.Panicked:
		return fmt.Sprintf("prompt function panicked at %s at step %d: %v", e.Site, e.Step, e.Err)
	case e.Site != "":
		return fmt.Sprintf("prompt function at %s, step %d: %v", e.Site, e.Step, e.Err)
	}
	return fmt.Sprintf("prompt function failed at step %d: %v", e.Step, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// MisuseError is a hook called wrongly: outside the prompt function, with a
// state key of another type, with a tool whose arguments have no JSON Schema.
// Hooks panic with it; the execution turns the panic into an *Error.
type MisuseError struct {
	Hook string
	Site string
	Err  error
}

func (e *MisuseError) Error() string {
	return fmt.Sprintf("%s at %s: %v", e.Hook, e.Site, e.Err)
}

func (e *MisuseError) Unwrap() error { return e.Err }

// errOutside is wrapped by a MisuseError for hooks called outside an
// execution.
var errOutside = errors.New("hook called outside the prompt function (from a tool, an effect or another goroutine?)")

// misuse panics with a *MisuseError naming the caller of the hook.
// skip counts the frames between misuse and the user's call: 1 when the hook
// calls misuse itself.
func misuse(hook string, err error, skip int) {
	panic(&MisuseError{Hook: hook, Site: callsite.Caller(skip + 1).String(), Err: err})
}

// check panics with a *MisuseError when no execution is under way. A hook
// called from a tool or an effect is always caught: they run between
// executions. A goroutine that the prompt function starts and that calls
// hooks while the execution is still under way is not (nothing tells it from
// the prompt function's own goroutine); the rules of hooks forbid it.
func (p *Prompt) check(hook string) {
	if !p.c().Executing() {
		misuse(hook, errOutside, 2)
	}
}

// Context returns the context of the execution under way: the run's, or,
// for a sub-agent, that of the parent's tool call that runs it. It is what
// the prompt function passes to a setter (see State). It is a hook.
func (p *Prompt) Context() context.Context {
	p.check("Context")
	return p.c().Context()
}

// Def declares a string variable, rendered in the system prompt's
// <variables> block.
func (p *Prompt) Def(name, value string) defs.Handle {
	p.check("Def")
	return p.declareDef("Def", defs.Def{Kind: defs.KindVariable, Name: name, Text: value})
}

// DefData declares a structured variable, rendered as YAML in the
// <variables> block. The YAML is that of the value's JSON form: the value is
// encoded with encoding/json (json tags rename and omit fields, omitempty
// holds, MarshalJSON is used, yaml tags are not read), and that JSON is
// written as block-style YAML with the same keys in the same order (struct
// fields in declaration order, map keys sorted), so the bytes stay the same
// from step to step while the value does. A value JSON cannot encode fails
// the step with an error naming the variable.
func (p *Prompt) DefData(name string, value any) defs.Handle {
	p.check("DefData")
	return p.declareDef("DefData", defs.Def{Kind: defs.KindVariable, Name: name, Data: value, IsData: true})
}

// DefSystem declares a named part of the system prompt, rendered as
// <name>text</name> in declaration order.
func (p *Prompt) DefSystem(name, text string) defs.Handle {
	p.check("DefSystem")
	return p.declareDef("DefSystem", defs.Def{Kind: defs.KindSystem, Name: name, Text: text})
}

// errEmptyName is wrapped by a MisuseError for a definition without a name.
var errEmptyName = errors.New("definition name is empty")

// declareDef declares d for the hook called by the user's function two
// frames up, panicking with a *MisuseError when its name is empty.
func (p *Prompt) declareDef(hook string, d defs.Def) defs.Handle {
	if d.Name == "" {
		misuse(hook, errEmptyName, 2)
	}
	return p.c().Registry().Declare(d)
}

// DefMessage adds a message to the transcript the first time it is
// declared, and never again. A declared message is identified as React
// identifies hooks: by its position among the prompt's unkeyed messages in
// the execution (the first p.User is message #0, the next #1, and a loop
// declares one per item), or by MessageKey when given — never by its text
// or its place in the source, so a resumed run finds its messages after the
// code moved. So p.User(fmt.Sprintf("Count: %d", count)) adds "Count: 0"
// once, at the first execution, and nothing when count changes: the text
// of a declared message is read only when it is added.
//
// Declare unkeyed messages unconditionally and in the same order at every
// execution, appending only (a loop over a list that grows is fine): a
// position taken by another call site than at the previous execution fails
// the step with a *MessageOrderError naming both. A message declared only
// sometimes, or before others that move, takes a MessageKey.
//
// A message that must join the transcript later, because something
// changed, is added by an effect: s.CommitAppend(defs.UserMessage(text))
// appends it to the transcript for good (see effects.Step.CommitAppend).
// DefMessage returns nothing: a message is not a definition that can be
// disabled.
func (p *Prompt) DefMessage(role defs.Role, text string, opts ...MessageOption) {
	p.check("DefMessage")
	p.defMessage(role, text, opts)
}

// MessageOption changes how a message is declared.
type MessageOption interface{ applyMessage(*messageOptions) }

type messageOptions struct{ key string }

type messageOptionFunc func(*messageOptions)

func (f messageOptionFunc) applyMessage(o *messageOptions) { f(o) }

// MessageKey identifies a declared message by key instead of its
// position: a message with a key is added once per prompt, wherever and however
// often it is declared, and keeps its identity when the code around it
// moves. Keys must be unique among a prompt's messages.
func MessageKey(key string) MessageOption {
	return messageOptionFunc(func(o *messageOptions) { o.key = key })
}

// messageKey returns the key opts give a message, or "". (A function of
// its own: the options take the address of what they change, which moves
// it to the heap, and a message declared without options need not pay for
// it.)
func messageKey(opts []MessageOption) string {
	if len(opts) == 0 {
		return ""
	}
	var o messageOptions
	for _, opt := range opts {
		opt.applyMessage(&o)
	}
	return o.key
}

// MessageOrderError reports an unkeyed message declared at a position
// where another call site declared one at the previous execution (a message
// inside an if, or after a loop whose list changed): matching them by
// position would take one for the other. The fix is MessageKey.
type MessageOrderError struct {
	Index int    // the position among the unkeyed messages
	Was   string // the call site at this position at the previous execution
	Now   string // the call site declaring at this position now
}

func (e *MessageOrderError) Error() string {
	return fmt.Sprintf("message #%d is declared at %s, but at %s on the previous execution: "+
		"unkeyed messages are identified by position; declare them unconditionally, appending only, or give them prompt.MessageKey",
		e.Index, e.Now, e.Was)
}

// defMessage declares a message for the user's function two frames up.
func (p *Prompt) defMessage(role defs.Role, text string, opts []MessageOption) {
	if o := p.c().DeclareMessage(role, text, messageKey(opts), callsite.CallerPC(2)); o != nil {
		p.c().Fail(o.Now, &MessageOrderError{Index: o.Index, Was: o.Was, Now: o.Now})
	}
}

// User declares a user message: DefMessage(defs.RoleUser, text, opts...).
func (p *Prompt) User(text string, opts ...MessageOption) {
	p.check("User")
	p.defMessage(defs.RoleUser, text, opts)
}

// Effect registers an effect for this execution. deps decides when it runs
// (effects.Always, effects.Once, effects.On(values...)); effects are
// identified by their registration order unless effects.Key is given, and a
// changed order is reported as an error rather than silently mixing their
// memory.
func (p *Prompt) Effect(deps effects.Deps, fn effects.Func, opts ...effects.Option) {
	p.check("Effect")
	// The site is the user's line, also for an effect a library helper
	// registers on the user's behalf (effects/builtin's Config.Register).
	p.c().Effects().Register(callsite.UserPC(1), deps, fn, opts...)
}

// State returns the value of key as of this execution and its setter. The
// initial value is stored only when the key is new. The same key anywhere
// in the prompt shares one value. It panics with a *MisuseError (turned into
// a run error naming the call site) if the key holds another type than T.
func State[T any](p *Prompt, key string, initial T) (T, state.Setter[T]) {
	p.check("State")
	v, err := state.Init(p.c().Store(), key, initial)
	if err != nil {
		misuse("State", err, 1)
	}
	return v, state.NewSetter[T](p.c().Store(), key)
}

// GetState returns the live value of key: a value set since this execution
// is visible at once, and so are the changes of the tool call whose context
// ctx is. It may be called at any time, from tools and effects too. The
// error is a *state.TypeError or *state.NotFoundError.
func GetState[T any](ctx context.Context, p *Prompt, key string) (T, error) {
	return state.Get[T](ctx, p.c().Store(), key)
}

// AgentRunner runs sub-agents. The runtime puts one in the context of every
// tool call, so that a tool declared with DefAgent can run its prompt.
type AgentRunner interface {
	// RunAgent runs fn as the sub-agent called name (the tool's name) to
	// completion, with task as its first user message and as its Input,
	// and returns the text of its last reply. ctx is the tool call's
	// context. An error (the sub-agent's run failed, ctx was cancelled)
	// becomes an error result for the parent's model. It may be called
	// concurrently, for the parallel tool calls of one reply.
	RunAgent(ctx context.Context, name string, fn Func, task string) (string, error)
}

type runnerKey struct{}

// ErrNoAgentRunner is returned by a sub-agent tool called without an
// AgentRunner in its context.
var ErrNoAgentRunner = errors.New("sub-agent tool called without an agent runner in its context (call it through a runtime.Runner)")
