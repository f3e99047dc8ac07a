package prompt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/internal/callsite"
	"github.com/reprompt/reprompt/internal/core"
)

// errNilFunc is wrapped by a MisuseError for a tool declared without a
// function.
var errNilFunc = errors.New("the tool's function is nil")

// toolSchema is the schema generated for one argument type (or given to
// DefSchemaTool), cached for the life of the process: a prompt re-declares
// its tools at every step.
type toolSchema = core.Schema

// validator returns the Validate function of the tool name.
func validator(ts *toolSchema, name string) func(json.RawMessage) error {
	return ts.Validator(name, func() func(json.RawMessage) error {
		return func(raw json.RawMessage) error { return validate(name, ts, raw) }
	})
}

var schemaCache sync.Map // reflect.Type → *toolSchema

func schemaFor(t reflect.Type) *toolSchema {
	if v, ok := schemaCache.Load(t); ok {
		return v.(*toolSchema)
	}
	ts := &toolSchema{NoFields: t.Kind() == reflect.Struct && t.NumField() == 0}
	opts, err := schemaOptions(t)
	var s *jsonschema.Schema
	if err == nil {
		s, err = jsonschema.ForType(t, opts)
	}
	switch {
	case err != nil:
		ts.Err = fmt.Errorf("cannot make a JSON Schema for %s: %w", t, err)
	case s.Type != "object":
		ts.Err = fmt.Errorf("tool arguments must be a struct or a map, not %s", t)
	default:
		if ts.Raw, err = json.Marshal(s); err == nil {
			ts.Resolved, err = s.Resolve(nil)
		}
		ts.Err = err
	}
	v, _ := schemaCache.LoadOrStore(t, ts)
	return v.(*toolSchema)
}

// ArgumentsError is a tool call whose arguments do not match the tool's
// schema or type. The model receives it as an error result.
type ArgumentsError struct {
	Tool string
	Err  error
}

func (e *ArgumentsError) Error() string {
	return fmt.Sprintf("invalid arguments for tool %q: %v", e.Tool, e.Err)
}

func (e *ArgumentsError) Unwrap() error { return e.Err }

// ToolNameError is a tool or sub-agent declared with a name providers
// reject: a name must match ^[a-zA-Z0-9_-]{1,64}$ (the pattern of the OpenAI
// API): 1 to 64 ASCII letters, digits, underscores and hyphens.
type ToolNameError struct {
	Name string
}

func (e *ToolNameError) Error() string {
	return fmt.Sprintf("invalid tool name %q: a tool name must match ^[a-zA-Z0-9_-]{1,64}$ "+
		"(1 to 64 ASCII letters, digits, '_' and '-')", e.Name)
}

// DuplicateToolError is a tool or sub-agent name declared twice in one
// execution of the prompt function. The model could not tell the two apart,
// so the second is not silently taken to replace the first.
type DuplicateToolError struct {
	Name string
	// First and Now are the call sites of the two declarations, each with
	// its callers up to the prompt function ("tools.go:12 ← agent.go:30").
	First, Now string
}

func (e *DuplicateToolError) Error() string {
	return fmt.Sprintf("tool %q declared twice in one execution: at %s and at %s", e.Name, e.First, e.Now)
}

// ValidToolName reports whether name matches ^[a-zA-Z0-9_-]{1,64}$.
func ValidToolName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// checkTool panics with a *MisuseError naming the caller of hook (DefTool
// or DefAgent) when name is not a valid tool name or was already declared
// in this execution. It returns the name's entry, marked as declared.
func (p *Prompt) checkTool(hook, name string) *core.ToolEntry {
	if !ValidToolName(name) {
		misuse(hook, &ToolNameError{Name: name}, 2)
	}
	pc := callsite.CallerPC(2)
	e, first, dup := p.c().DeclareTool(name, pc)
	if dup {
		now := callsite.Name(pc)
		panic(&MisuseError{Hook: hook, Site: now,
			Err: &DuplicateToolError{Name: name, First: callsite.Name(first), Now: now}})
	}
	return e
}

// DefTool declares a tool the model may call. The JSON Schema of its
// arguments is generated from A (a struct: exported fields by their json
// names, fields without omitempty required, a `jsonschema:"..."` tag as the
// description). Arguments are validated against the schema before fn runs;
// invalid arguments, a returned error and a panic all become error results
// for the model, never a crash. The result is sent as is when R is a string
// and as JSON otherwise.
//
// name must match ^[a-zA-Z0-9_-]{1,64}$, as providers require, and be
// declared once per execution (sub-agents included). fn may run
// concurrently with other tools of the same reply. DefTool panics with a
// *MisuseError (a run error naming the call site) when the name is invalid
// (*ToolNameError) or already declared in this execution
// (*DuplicateToolError, naming both call sites), or when A has no JSON
// Schema of type object.
func DefTool[A, R any](p *Prompt, name, description string, fn func(ctx context.Context, args A) (R, error), opts ...ToolOption) defs.Handle {
	p.check("DefTool")
	e := p.checkTool("DefTool", name)
	if fn == nil {
		misuse("DefTool "+name, errNilFunc, 1)
	}
	typ := reflect.TypeFor[A]()
	ts := e.Last.Schema // the schema of the last declaration, when made for A (saves the cache's lookup)
	if ts == nil || e.Last.Type != typ {
		ts = schemaFor(typ)
	}
	if ts.Err != nil {
		misuse("DefTool "+name, ts.Err, 1)
	}
	if err := checkApprovalType(opts, typ); err != nil {
		misuse("DefTool "+name, err, 1)
	}
	o, fnType := toolOpts(opts), reflect.TypeFor[func(context.Context, A) (R, error)]()
	if t := same(&e.Last, description, ts, o, fnType); t != nil {
		return p.reuse(e, t, fn, o)
	}
	held := new(atomic.Value)
	held.Store(fn)
	return p.declareTool(e, name, description, ts, typ, o, fnType, held, func(ctx context.Context, raw json.RawMessage) (string, error) {
		var args A
		if !ts.NoFields || !known(ts, raw) { // a valid object decodes into no fields as nothing
			if err := json.Unmarshal(orEmpty(raw), &args); err != nil {
				return "", &ArgumentsError{Tool: name, Err: err}
			}
		}
		res, err := held.Load().(func(context.Context, A) (R, error))(ctx, args)
		if err != nil {
			return "", err
		}
		return resultText(res)
	})
}

// declareTool declares a tool whose arguments ts describes and validates,
// and which runs call, the wrapper of the user's function of type fnType,
// which fn holds (see same).
func (p *Prompt) declareTool(e *core.ToolEntry, name, description string, ts *toolSchema, typ reflect.Type, o toolOptions, fnType reflect.Type, fn *atomic.Value, call defs.ToolFunc) defs.Handle {
	approve, approval := approvalOf(o)
	t := &defs.Tool{
		Name:          name,
		Description:   description,
		Idempotent:    o.idempotent,
		NeedsApproval: approve,
		Schema:        ts.Raw,
		Validate:      validator(ts, name),
		Call:          call,
	}
	e.Last = core.LastTool{Tool: t, Schema: ts, Type: typ, FnType: fnType, Fn: fn, Approval: approval}
	return p.c().Registry().Declare(defs.Def{Kind: defs.KindTool, Name: name, Tool: t})
}

func orEmpty(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("{}")
	}
	return raw
}

// known reports whether raw are the last arguments that validated against
// ts.
func known(ts *toolSchema, raw json.RawMessage) bool { return ts.Known(string(orEmpty(raw))) }

func validate(name string, ts *toolSchema, raw json.RawMessage) error {
	if known(ts, raw) {
		return nil // validation depends on the schema and the arguments only
	}
	raw = orEmpty(raw)
	var inst any
	if err := json.Unmarshal(raw, &inst); err != nil {
		return &ArgumentsError{Tool: name, Err: fmt.Errorf("not valid JSON: %w", err)}
	}
	if err := ts.Resolved.Validate(inst); err != nil {
		return &ArgumentsError{Tool: name, Err: err}
	}
	ts.MarkValid(string(raw))
	return nil
}

func resultText[R any](res R) (string, error) {
	switch x := any(res).(type) {
	case string:
		return x, nil
	case int: // as json.Marshal writes it, without its buffers
		return strconv.Itoa(x), nil
	case bool:
		return strconv.FormatBool(x), nil
	}
	b, err := json.Marshal(res)
	if err != nil {
		return "", fmt.Errorf("cannot encode tool result as JSON: %w", err)
	}
	return string(b), nil
}

// ToolOption changes how a tool is declared.
type ToolOption interface{ apply(*toolOptions) }

type toolOptions struct {
	idempotent bool
	// approval decides whether a call needs approval; approvalType is the
	// argument type NeedsApprovalIf's function takes (nil for
	// NeedsApproval).
	approval     func(json.RawMessage) (bool, error)
	approvalType reflect.Type
}

type toolOptionFunc func(*toolOptions)

func (f toolOptionFunc) apply(o *toolOptions) { f(o) }

// Idempotent declares that running the tool again with the same arguments
// (and call id, see CallID) is safe. When a run resumes after a crash, a
// call of an idempotent tool that was left without a result is run again;
// any other tool gets an "interrupted" result instead.
func Idempotent() ToolOption { return toolOptionFunc(func(o *toolOptions) { o.idempotent = true }) }

type callIDKey struct{}

// WithCallID returns a context carrying the id of the tool call being run,
// which CallID returns. The runtime sets it for every tool call; a test
// that calls a tool's function directly can set it too.
func WithCallID(ctx context.Context, id string) context.Context {
	if ctx == nil {
		panic("prompt.WithCallID: nil parent context") // as context.WithValue panics
	}
	return &callCtx{Context: ctx, id: id}
}

// CallID returns the id of the tool call being run, or "". A tool can use
// it as an idempotency key.
func CallID(ctx context.Context) string {
	if c, ok := ctx.Value(callIDKey{}).(*callCtx); ok {
		return c.id
	}
	return ""
}

// AgentArgs are the arguments of a sub-agent tool.
type AgentArgs struct {
	Task string `json:"task" jsonschema:"the task for the sub-agent, with everything it needs to know"`
}

// DefAgent declares a sub-agent: a tool that runs fn as a full prompt of its
// own (re-execution, state, effects) to completion, with the task the model
// gives as its first user message and as Input. The model gets the
// sub-agent's final answer, not its transcript. Its name follows the rules
// of DefTool's, and it panics as DefTool does. The options are DefTool's:
// with NeedsApproval, a call of the sub-agent waits for a person's decision
// before the sub-agent starts (NeedsApprovalIf takes a func(AgentArgs) bool).
func (p *Prompt) DefAgent(name, description string, fn Func, opts ...ToolOption) defs.Handle {
	p.check("DefAgent")
	e := p.checkTool("DefAgent", name)
	if fn == nil {
		misuse("DefAgent "+name, errNilFunc, 1)
	}
	ts := schemaFor(reflect.TypeFor[AgentArgs]())
	if err := checkApprovalType(opts, reflect.TypeFor[AgentArgs]()); err != nil {
		misuse("DefAgent "+name, err, 1)
	}
	o := toolOpts(opts)
	e.Last = core.LastTool{} // a sub-agent's tool is made anew (see core.ToolEntry)
	return p.c().Registry().Declare(defs.Def{Kind: defs.KindTool, Name: name, Tool: &defs.Tool{
		Name:          name,
		Description:   description,
		Schema:        ts.Raw,
		Agent:         true,
		Idempotent:    o.idempotent,
		NeedsApproval: o.approval,
		Validate:      validator(ts, name),
		Call: func(ctx context.Context, raw json.RawMessage) (string, error) {
			var args AgentArgs
			if err := json.Unmarshal(orEmpty(raw), &args); err != nil {
				return "", &ArgumentsError{Tool: name, Err: err}
			}
			r, ok := ctx.Value(runnerKey{}).(AgentRunner)
			if !ok {
				return "", ErrNoAgentRunner
			}
			return r.RunAgent(ctx, name, fn, args.Task)
		},
	}})
}
