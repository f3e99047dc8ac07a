// Package defs holds the definitions a prompt function declares on each
// execution (variables, structured data, system-prompt parts, tools and
// sub-agents), the handles returned for them, the read-only collections
// effects see, and the reconciliation that removes definitions a prompt
// stopped declaring.
//
// Package defs depends on the standard library only.
package defs

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"sync"
)

// Kind says what a definition is. Names are unique within a kind: a tool and
// a variable may share a name.
type Kind uint8

// The kinds of definitions.
const (
	// KindVariable is a variable (Def) or a structured variable (DefData),
	// rendered in the system prompt's <variables> block.
	KindVariable Kind = iota + 1
	// KindSystem is a named part of the system prompt (DefSystem).
	KindSystem
	// KindTool is a tool the model may call (DefTool), sub-agents included.
	KindTool
)

// String returns "variable", "system" or "tool".
func (k Kind) String() string {
	switch k {
	case KindVariable:
		return "variable"
	case KindSystem:
		return "system"
	case KindTool:
		return "tool"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// ToolFunc runs a tool with arguments already validated against its schema
// and returns the text given back to the model. A returned error becomes an
// error result for the model; it does not stop the run.
type ToolFunc func(ctx context.Context, args json.RawMessage) (string, error)

// Tool describes a tool the model may call.
type Tool struct {
	// Name is the name the model calls the tool by.
	Name string
	// Description tells the model what the tool does.
	Description string
	// Schema is the JSON Schema of the arguments object. It is sent to the
	// model as is, so it must not be modified once the tool is declared.
	Schema json.RawMessage
	// Validate checks arguments before Call runs. If nil, any JSON object is
	// accepted.
	Validate func(args json.RawMessage) error
	// Call runs the tool. It may be called concurrently with other tools.
	Call ToolFunc
	// Agent reports that the tool runs a sub-agent.
	Agent bool
	// Idempotent reports that the tool may safely run again with the same
	// arguments (used when a run resumes after a crash).
	Idempotent bool
	// NeedsApproval, if set, decides for each call, from its arguments
	// (already validated), whether a person must approve the call before it
	// runs. A call it returns true for does not run: the run pauses until
	// the call is approved or denied. An error or a panic means the call
	// does not run and gets an error result. Nil means no call needs
	// approval.
	NeedsApproval func(args json.RawMessage) (bool, error)
}

// Def is one declared definition.
type Def struct {
	Kind Kind
	Name string
	// Text is the value of a string variable or the text of a system part.
	Text string
	// Data is the value of a structured variable (IsData is true); it is
	// rendered as YAML.
	Data   any
	IsData bool
	// Tool is set for KindTool.
	Tool *Tool
}

type key struct {
	kind Kind
	name string
}

type entry struct {
	def Def
	gen uint64
}

// Registry holds the definitions of one prompt and the per-step filters
// (disables and reminders) applied to them.
//
// Declarations and reconciliation are made by the single goroutine that
// executes the prompt function; Disable, Remind and the read methods are safe
// for concurrent use. Disables and reminders shape the request of the step
// under way and are cleared when the next step begins: made by the prompt
// function or a BeforeCall effect they take effect, made once the request
// was sent (by a tool or an AfterReply effect) they have none. To act on the
// next step, set state and disable from the prompt function or an effect.
type Registry struct {
	mu       sync.Mutex // not a RWMutex: declarations, made at every execution, outnumber concurrent reads, and its write lock costs twice the atomics
	entries  []*entry
	index    map[key]*entry
	gen      uint64
	disabled map[key]string // by whom (see SetActor)
	reminded []key
	remindBy []string // by whom, for each of reminded
	actor    string   // who disables and reminds now: "" for the prompt function
	// cursor is the position after the last definition re-declared in
	// place: a prompt declares its definitions in the same order at every
	// execution, so the next declaration is usually the entry at cursor,
	// found without hashing its name.
	cursor int
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{index: make(map[key]*entry), disabled: make(map[key]string)}
}

// BeginExecution starts a new execution of the prompt function: definitions
// not declared again before Reconcile is called are removed.
func (r *Registry) BeginExecution() {
	r.mu.Lock()
	r.gen++
	r.cursor = 0
	r.mu.Unlock()
}

// BeginStep clears the disables and reminders of the previous step.
func (r *Registry) BeginStep() {
	r.mu.Lock()
	clear(r.disabled)
	r.reminded = r.reminded[:0]
	r.remindBy = r.remindBy[:0]
	r.mu.Unlock()
}

// SetActor names who makes the disables and reminders that follow, until
// the next SetActor: an effect's ID while it runs (effects.Manager calls
// it through OnRun), "" otherwise. The first to disable or remind a
// definition in a step is the one DisabledBy and RemindedBy name, so that
// a step's record can say which effect withdrew a tool.
func (r *Registry) SetActor(id string) {
	r.mu.Lock()
	r.actor = id
	r.mu.Unlock()
}

// Declare adds d, or replaces the definition of the same kind and name while
// keeping its position, and returns its handle.
func (r *Registry) Declare(d Def) Handle {
	// The usual case takes no lock: the definition at the cursor declared
	// again unchanged. Only the declaring goroutine writes entries, cursor
	// and gen, and a reader, which reads a definition under the lock, cannot
	// tell the declaration from none.
	if c := r.cursor; c < len(r.entries) {
		if e := r.entries[c]; sameDef(&e.def, &d) {
			e.gen = r.gen
			r.cursor++
			return Handle{r: r, kind: d.Kind, name: d.Name}
		}
	}
	k := key{d.Kind, d.Name}
	r.mu.Lock()
	if c := r.cursor; c < len(r.entries) && r.entries[c].def.Kind == d.Kind && r.entries[c].def.Name == d.Name {
		e := r.entries[c] // the index holds it too
		e.def = d
		e.gen = r.gen
		r.cursor++
	} else if e, ok := r.index[k]; ok {
		e.def = d
		e.gen = r.gen
	} else {
		e := &entry{def: d, gen: r.gen}
		r.entries = append(r.entries, e)
		r.index[k] = e
	}
	r.mu.Unlock()
	return Handle{r: r, kind: d.Kind, name: d.Name}
}

// sameDef reports whether b declares a again, unchanged. Structured
// values (IsData) are never the same: they are not comparable.
func sameDef(a, b *Def) bool {
	return a.Kind == b.Kind && a.Name == b.Name && a.Text == b.Text && a.Tool == b.Tool &&
		!a.IsData && !b.IsData && a.Data == nil && b.Data == nil
}

// Reconcile removes the definitions not declared since the last
// BeginExecution and returns them in their former order.
func (r *Registry) Reconcile() []Def {
	r.mu.Lock()
	defer r.mu.Unlock()
	var removed []Def
	kept := r.entries[:0]
	for _, e := range r.entries {
		if e.gen == r.gen {
			kept = append(kept, e)
			continue
		}
		removed = append(removed, e.def)
		delete(r.index, key{e.def.Kind, e.def.Name})
	}
	clear(r.entries[len(kept):])
	r.entries = kept
	r.cursor = 0
	return removed
}

// Lookup returns the definition of the given kind and name, if declared.
func (r *Registry) Lookup(kind Kind, name string) (Def, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.index[key{kind, name}]
	if !ok {
		return Def{}, false
	}
	return e.def, true // copied under the lock: Declare replaces it
}

// Handle returns the handle of a declared definition.
func (r *Registry) Handle(kind Kind, name string) (Handle, bool) {
	if _, ok := r.Lookup(kind, name); !ok {
		return Handle{}, false
	}
	return Handle{r: r, kind: kind, name: name}, true
}

// Disable removes the definition from the current step's request. It lasts
// until the next BeginStep.
func (r *Registry) Disable(kind Kind, name string) {
	k := key{kind, name}
	r.mu.Lock()
	if _, ok := r.disabled[k]; !ok {
		r.disabled[k] = r.actor
	}
	r.mu.Unlock()
}

// DisabledBy returns who first disabled the definition in the current
// step (the actor SetActor named then: "" when no effect was running) and
// whether it is disabled.
func (r *Registry) DisabledBy(kind Kind, name string) (string, bool) {
	r.mu.Lock()
	by, ok := r.disabled[key{kind, name}]
	r.mu.Unlock()
	return by, ok
}

// Disabled reports whether the definition is disabled for the current step.
func (r *Registry) Disabled(kind Kind, name string) bool {
	r.mu.Lock()
	_, ok := r.disabled[key{kind, name}]
	r.mu.Unlock()
	return ok
}

// Remind names the definition in the current step's reminder. Reminding the
// same definition twice names it once.
func (r *Registry) Remind(kind Kind, name string) {
	k := key{kind, name}
	r.mu.Lock()
	if !slices.Contains(r.reminded, k) {
		r.reminded = append(r.reminded, k)
		r.remindBy = append(r.remindBy, r.actor)
	}
	r.mu.Unlock()
}

// RemindedBy returns who first reminded the definition in the current
// step (see DisabledBy) and whether it is reminded.
func (r *Registry) RemindedBy(kind Kind, name string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i := slices.Index(r.reminded, key{kind, name}); i >= 0 {
		return r.remindBy[i], true
	}
	return "", false
}

// Ref names a definition by kind and name.
type Ref struct {
	Kind Kind
	Name string
}

// String returns "kind:name".
func (f Ref) String() string { return f.Kind.String() + ":" + f.Name }

// Reminded returns the definitions reminded in the current step, in the order
// they were first reminded. The caller owns the returned slice.
func (r *Registry) Reminded() []Ref {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.reminded) == 0 {
		return nil
	}
	out := make([]Ref, len(r.reminded))
	for i, k := range r.reminded {
		out[i] = Ref{k.kind, k.name}
	}
	return out
}

// DisabledRefs returns the definitions disabled in the current step, in
// declaration order (disabled names that are not declared come last, sorted).
// The caller owns the returned slice.
func (r *Registry) DisabledRefs() []Ref {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.disabled) == 0 {
		return nil
	}
	out := make([]Ref, 0, len(r.disabled))
	seen := 0
	for _, e := range r.entries {
		if _, ok := r.disabled[key{e.def.Kind, e.def.Name}]; ok {
			out = append(out, Ref{e.def.Kind, e.def.Name})
			seen++
		}
	}
	if seen < len(r.disabled) {
		var extra []Ref
		for k := range r.disabled {
			if _, ok := r.index[k]; !ok {
				extra = append(extra, Ref{k.kind, k.name})
			}
		}
		slices.SortFunc(extra, func(a, b Ref) int {
			if a.Kind != b.Kind {
				return int(a.Kind) - int(b.Kind)
			}
			if a.Name < b.Name {
				return -1
			}
			if a.Name > b.Name {
				return 1
			}
			return 0
		})
		out = append(out, extra...)
	}
	return out
}

// Collection returns a read-only view of the definitions of one kind.
func (r *Registry) Collection(kind Kind) Collection { return Collection{r: r, kind: kind} }

// Collection is a live, read-only view of the declared definitions of one
// kind, in declaration order. Disabled definitions are included; use
// Enabled to skip them. The zero Collection is empty.
type Collection struct {
	r    *Registry
	kind Kind
}

// Has reports whether a definition with this name is declared.
func (c Collection) Has(name string) bool {
	if c.r == nil {
		return false
	}
	_, ok := c.r.Lookup(c.kind, name)
	return ok
}

// Get returns the definition with this name.
func (c Collection) Get(name string) (Def, bool) {
	if c.r == nil {
		return Def{}, false
	}
	return c.r.Lookup(c.kind, name)
}

// Handle returns the handle of the definition with this name, so an effect
// can disable or remind it.
func (c Collection) Handle(name string) (Handle, bool) {
	if c.r == nil {
		return Handle{}, false
	}
	return c.r.Handle(c.kind, name)
}

// All iterates over the definitions in declaration order. It does not hold
// a lock while it yields, so the loop body may use the registry.
func (c Collection) All() iter.Seq[Def] {
	return c.each(false)
}

// Enabled iterates over the definitions not disabled in the current step.
func (c Collection) Enabled() iter.Seq[Def] {
	return c.each(true)
}

func (c Collection) each(enabled bool) iter.Seq[Def] {
	return func(yield func(Def) bool) {
		if c.r == nil {
			return
		}
		for i := 0; ; i++ {
			d, at, ok := c.r.next(c.kind, i, enabled)
			if !ok || !yield(d) {
				return
			}
			i = at
		}
	}
}

// next returns the first definition of kind at position i or after it, not
// disabled if enabled is set, and its position. It takes the lock once for
// the definitions it skips and the one it returns.
func (r *Registry) next(kind Kind, i int, enabled bool) (Def, int, bool) {
	r.mu.Lock() // unlocked without defer: nothing here panics, and a deferred call costs a wrapper at every definition
	for ; i < len(r.entries); i++ {
		d := &r.entries[i].def
		if d.Kind != kind {
			continue
		}
		if enabled && len(r.disabled) > 0 {
			if _, off := r.disabled[key{d.Kind, d.Name}]; off {
				continue
			}
		}
		out := *d
		r.mu.Unlock()
		return out, i, true
	}
	r.mu.Unlock()
	return Def{}, i, false
}

// AppendEnabled appends the definitions of kind not disabled in the
// current step to dst, in declaration order, and returns the extended
// slice. It takes the lock once, where iterating over a Collection takes
// it once per definition: it is for code that reads every definition of a
// kind at every step, as the runtime's renderer does.
func (r *Registry) AppendEnabled(dst []Def, kind Kind) []Def {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.entries {
		if e.def.Kind != kind {
			continue
		}
		if len(r.disabled) > 0 {
			if _, off := r.disabled[key{kind, e.def.Name}]; off {
				continue
			}
		}
		dst = append(dst, e.def)
	}
	return dst
}

// Filter returns the definitions for which keep reports true. The caller owns
// the returned slice.
func (c Collection) Filter(keep func(Def) bool) []Def {
	var out []Def
	for d := range c.All() {
		if keep(d) {
			out = append(out, d)
		}
	}
	return out
}

// Names returns the names in declaration order.
func (c Collection) Names() []string {
	var out []string
	for d := range c.All() {
		out = append(out, d.Name)
	}
	return out
}

// Len returns the number of declared definitions of this kind.
func (c Collection) Len() int {
	if c.r == nil {
		return 0
	}
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	n := 0
	for _, e := range c.r.entries {
		if e.def.Kind == c.kind {
			n++
		}
	}
	return n
}

// Handle refers to a declared definition. It prints as its tag, <name>, so it
// can be used inside message text. The zero Handle refers to nothing; its
// Disable and Remind do nothing.
type Handle struct {
	r    *Registry
	kind Kind
	name string
}

// Name returns the definition's name.
func (h Handle) Name() string { return h.name }

// Kind returns the definition's kind.
func (h Handle) Kind() Kind { return h.kind }

// Tag returns "<name>".
func (h Handle) Tag() string { return "<" + h.name + ">" }

// String returns the tag, so fmt.Sprintf("use %s", h) names the definition.
func (h Handle) String() string { return h.Tag() }

// Disable removes the definition from the current step's request only. A
// disabled tool the model calls anyway is not run; the model gets an error
// result. Called after the request was sent (from a tool), it has no
// effect. To keep a definition disabled over several steps, keep the
// decision in state and call Disable from the prompt function at every
// execution (see the keepToolDisabled example of package prompt).
func (h Handle) Disable() {
	if h.r != nil {
		h.r.Disable(h.kind, h.name)
	}
}

// Remind names the definition in a reminder appended to the current step's
// request only.
func (h Handle) Remind() {
	if h.r != nil {
		h.r.Remind(h.kind, h.name)
	}
}
