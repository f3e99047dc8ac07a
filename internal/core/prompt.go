// Package core is the state of a prompt behind its two faces: package
// prompt, which a prompt function declares through, and package runtime,
// which executes it and reads what it declared.
//
// prompt.Prompt is defined as a Prompt of this package (type Prompt
// core.Prompt), so the two convert into each other at no cost: the hooks of
// package prompt convert their handle to reach the state, and the runtime
// converts the state it made to the handle it passes the prompt function.
// Nothing is looked up at run time, and nothing is wired at init: the
// runtime calls Prompt.Execute, which calls the prompt function through the
// closure the runtime gives it.
//
// The fields are unexported, and this package is internal: a prompt author
// sees the methods of prompt.Prompt only (a defined type does not inherit
// the methods of the type it is defined from).
package core

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/internal/callsite"
	"github.com/reprompt/reprompt/state"
)

// Prompt is the state of one prompt: its definitions, state store, effects,
// declared messages and tools, across the executions of its function. Its
// hooks are called by the goroutine executing the prompt function; Step and
// Executing may be read from any goroutine.
type Prompt struct {
	reg           *defs.Registry
	store         *state.Store
	eff           effects.Manager
	step          atomic.Int64 // read by Step from any goroutine (a tool's, still running)
	input         string
	executing     atomic.Bool           // an execution is under way (read by hooks called from any goroutine)
	ctx           context.Context       // the context of the execution under way
	seen          map[string]struct{}   // identities of declared messages added so far
	restored      map[string]struct{}   // role+text identities restored by MarkMessagesSeen
	seenList      []string              // SeenMessages' last result, nil once seen or restored changed
	added         []defs.Message        // messages added by the current execution
	addedIDs      [][2]string           // their identities: by position or key, by role and text
	msgPCs        []uintptr             // the call sites of the unkeyed messages, by position, at the last execution
	msgN          int                   // unkeyed messages declared by the current execution
	execErr       error                 // the first misuse reported by a hook of the current execution (see Fail)
	execErrSite   string                // where it was
	tools         map[string]*ToolEntry // tool names by the last execution that declared them
	execs         int                   // executions begun
	toolsDeclared int                   // tool names the current execution declared
	output        *defs.Output          // the typed answer the current execution declared
	turn          int                   // the conversation's turn (see SetTurn)
	turnMessage   string
}

// SetTurn records the conversation's turn, which the prompt function reads
// (prompt.Prompt.Turn): its number and the user message that started it.
func (p *Prompt) SetTurn(n int, message string) { p.turn, p.turnMessage = n, message }

// Turn returns what SetTurn recorded.
func (p *Prompt) Turn() (int, string) { return p.turn, p.turnMessage }

// New returns a Prompt with empty definitions, state and effects. input is
// the task a sub-agent was given ("" for a top-level prompt).
func New(input string) *Prompt {
	p := &Prompt{
		reg:      defs.NewRegistry(),
		store:    state.New(),
		input:    input,
		seen:     make(map[string]struct{}),
		restored: make(map[string]struct{}),
	}
	// Disables and reminders made while an effect runs are its own.
	p.eff.OnRun(p.reg.SetActor)
	return p
}

// Registry returns the prompt's definitions.
func (p *Prompt) Registry() *defs.Registry { return p.reg }

// Store returns the prompt's state.
func (p *Prompt) Store() *state.Store { return p.store }

// Effects returns the prompt's effects.
func (p *Prompt) Effects() *effects.Manager { return &p.eff }

// Step returns the number of the step being prepared, from 0.
func (p *Prompt) Step() int { return int(p.step.Load()) }

// Input returns the task given to a sub-agent, or "".
func (p *Prompt) Input() string { return p.input }

// Executing reports whether an execution is under way.
func (p *Prompt) Executing() bool { return p.executing.Load() }

// Context returns the context of the execution under way, or nil.
func (p *Prompt) Context() context.Context { return p.ctx }

// Output returns the typed answer the last execution declared, or nil.
func (p *Prompt) Output() *defs.Output { return p.output }

// SetOutput records the typed answer the execution declares.
func (p *Prompt) SetOutput(o *defs.Output) { p.output = o }

// Fail records a misuse a hook found without panicking (a message declared
// out of order): the execution goes on, and Execute returns the first one,
// at site.
func (p *Prompt) Fail(site string, err error) {
	if p.execErr == nil {
		p.execErr, p.execErrSite = err, site
	}
}

// ExecError is an execution that failed: the prompt function returned Err,
// or panicked with Value at Site, or a hook reported a misuse (Fail), or
// the effects did (effects.Manager.End). Package runtime makes it a
// *prompt.Error.
type ExecError struct {
	Step     int
	Site     string // where it panicked or the misuse was; "" for a returned error
	Panicked bool
	Value    any   // the panic's value
	Err      error // the returned error, the misuse, or the panic's value as an error
}

func (e *ExecError) Error() string { return e.Err.Error() }

// Execute runs execution number step: call calls the prompt function with
// this prompt's handle. It re-declares definitions, reconciles the ones not
// declared again, and collects effects, and it returns the messages the
// execution declared for the first time, for the caller to append to the
// transcript. A failure is an *ExecError. ctx is what Context returns while
// call runs.
func (p *Prompt) Execute(ctx context.Context, step int, call func() error) (added []defs.Message, err error) {
	p.step.Store(int64(step))
	p.added = p.added[:0]
	p.addedIDs = p.addedIDs[:0]
	p.msgN, p.execErr, p.execErrSite = 0, nil, ""
	p.execs++
	p.toolsDeclared = 0
	p.output = nil
	p.reg.BeginExecution()
	p.eff.Begin()
	p.ctx = ctx
	p.executing.Store(true)
	defer func() {
		p.executing.Store(false)
		p.ctx = nil
		if v := recover(); v != nil {
			perr, ok := v.(error)
			if !ok {
				perr = fmt.Errorf("%v", v)
			}
			err = &ExecError{Step: step, Site: callsite.Panic().String(), Panicked: true, Value: v, Err: perr}
		}
	}()
	if ferr := call(); ferr != nil {
		return nil, &ExecError{Step: step, Err: ferr}
	}
	if p.execErr != nil {
		return nil, &ExecError{Step: step, Site: p.execErrSite, Err: p.execErr}
	}
	p.reg.Reconcile()
	p.forgetUndeclaredTools()
	if eerr := p.eff.End(); eerr != nil {
		return nil, &ExecError{Step: step, Site: effectSite(eerr), Err: eerr}
	}
	return p.added, nil
}

// effectSite returns the call site an error of the effects names: the
// effect registered out of order, the second use of a key, or the effect
// whose cleanup panicked.
func effectSite(err error) string {
	var he *effects.HookOrderError
	var de *effects.DuplicateKeyError
	var ee *effects.Error
	switch {
	case errors.As(err, &he):
		return he.Now
	case errors.As(err, &de):
		return de.Now
	case errors.As(err, &ee):
		return ee.Site // a cleanup of an effect no longer registered
	}
	return ""
}

// MarkMessagesSeen records messages as already added, so that a resumed
// prompt does not add its declared messages again. It is used by the
// runtime when it restores a session, with the identities SeenMessages
// returned, and by a sub-agent for its task message (MessageID).
//
// Identities by role and text (MessageID, saved beside every position or
// key, and all of those of checkpoints written before messages were
// identified by position) are matched against a declared message whose
// position or key was not seen: a resumed run of such a checkpoint does not
// add again a message it already holds. (Identities by call site, which
// older checkpoints hold too, match nothing and are kept as they are.)
func (p *Prompt) MarkMessagesSeen(ids []string) {
	p.seenList = nil
	for _, id := range ids {
		if isTextID(id) {
			p.restored[id] = struct{}{}
		} else {
			p.seen[id] = struct{}{}
		}
	}
}

// Forget makes declared messages count as not added yet, so that the next
// execution that declares them adds them. msgs are messages the last
// execution added, as Execute returned them. The runtime uses it when it
// re-executes a prompt function only to complete an interrupted step.
func (p *Prompt) Forget(msgs []defs.Message) {
	p.seenList = nil
	for i, a := range p.added {
		for _, m := range msgs {
			if a.Identical(m) {
				delete(p.seen, p.addedIDs[i][0])
				delete(p.seen, p.addedIDs[i][1])
				break
			}
		}
	}
}

// SeenMessages returns the identities of the declared messages added so
// far, sorted: by position or key, and by role and text (see
// MarkMessagesSeen). The slice is shared by the calls made while no
// message is added (every checkpoint of a run saves it): read-only.
func (p *Prompt) SeenMessages() []string {
	if p.seenList != nil {
		return p.seenList
	}
	out := make([]string, 0, len(p.seen)+len(p.restored))
	for id := range p.seen {
		out = append(out, id)
	}
	for id := range p.restored {
		if _, ok := p.seen[id]; !ok {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	p.seenList = slices.Clip(out)
	return p.seenList
}

// positionIDs are the identities of the first unkeyed messages by
// position, made once: a declaration costs no allocation.
var positionIDs = func() []string {
	ids := make([]string, 64)
	for i := range ids {
		ids[i] = "#" + strconv.Itoa(i)
	}
	return ids
}()

func positionID(i int) string {
	if i < len(positionIDs) {
		return positionIDs[i]
	}
	return "#" + strconv.Itoa(i)
}

// MessageOrder is an unkeyed message declared at a position where another
// call site declared one at the previous execution.
type MessageOrder struct {
	Index    int
	Was, Now string
}

// DeclareMessage declares a message, identified by key when it is not ""
// and else by its position among the unkeyed messages of the execution; pc
// is its call site, compared with the one at the same position at the
// previous execution. It returns the order change it found, if any (the
// message is declared all the same).
func (p *Prompt) DeclareMessage(role defs.Role, text, key string, pc uintptr) *MessageOrder {
	var id string
	var order *MessageOrder
	if key != "" {
		id = "key:" + key
	} else {
		i := p.msgN
		p.msgN++
		if i < len(p.msgPCs) {
			if was := p.msgPCs[i]; was != 0 && was != pc {
				order = &MessageOrder{Index: i, Was: callsite.Name(was), Now: callsite.Name(pc)}
			}
			p.msgPCs[i] = pc
		} else {
			p.msgPCs = append(p.msgPCs, pc)
		}
		id = positionID(i)
	}
	if _, ok := p.seen[id]; ok {
		return order
	}
	textID := MessageID(role, text)
	p.seenList = nil
	p.seen[id] = struct{}{}
	if _, ok := p.restored[textID]; ok {
		return order // added before the checkpoint this prompt was restored from
	}
	p.seen[textID] = struct{}{}
	p.added = append(p.added, defs.Message{Role: role, Content: text})
	p.addedIDs = append(p.addedIDs, [2]string{id, textID})
	return order
}

// MessageID returns the identity of a message by role and text. It is how
// checkpoints written before messages were identified by position name
// them, and how a sub-agent marks its task message as added (see
// MarkMessagesSeen).
func MessageID(role defs.Role, text string) string { return string(role) + "\x00" + text }

// isTextID reports whether id was made by MessageID.
func isTextID(id string) bool {
	role, _, ok := strings.Cut(id, "\x00")
	if !ok {
		return false
	}
	switch defs.Role(role) {
	case defs.RoleUser, defs.RoleAssistant, defs.RoleSystem, defs.RoleTool:
		return true
	}
	return false
}

// ToolEntry is what a prompt keeps of a tool name: which execution declared
// it last and from where (for the duplicate check), and the tool made for
// it (for reuse; zero after a sub-agent, whose tool is made anew at every
// execution).
type ToolEntry struct {
	Exec int     // the execution that declared the name last
	PC   uintptr // where it did
	Last LastTool
}

// LastTool is a tool as the last execution declared it, with what it was
// made from.
type LastTool struct {
	Tool   *defs.Tool
	Schema *Schema
	Type   reflect.Type // DefTool's argument type, which Schema was made for; nil for a tool with a given schema
	// FnType is the type of the user's function, and Fn holds the function
	// the last execution gave, which Tool's Call runs (and Approval the
	// approval decision it gave, which Tool's NeedsApproval asks, or nil):
	// a tool declared again unchanged but for its function values keeps
	// its Tool and runs the functions of the execution that declared it
	// last. Tools run between executions, never during one.
	FnType   reflect.Type
	Fn       *atomic.Value
	Approval *atomic.Value
}

// DeclareTool marks name as declared by this execution at pc. It returns
// the name's entry and, when the execution already declared it, the call
// site of that declaration (dup is true).
func (p *Prompt) DeclareTool(name string, pc uintptr) (e *ToolEntry, first uintptr, dup bool) {
	e = p.tools[name]
	switch {
	case e != nil && e.Exec == p.execs:
		return e, e.PC, true
	case e == nil:
		if p.tools == nil {
			p.tools = make(map[string]*ToolEntry)
		}
		e = new(ToolEntry)
		p.tools[name] = e
	}
	e.Exec, e.PC = p.execs, pc
	p.toolsDeclared++
	return e, 0, false
}

// forgetUndeclaredTools drops the tools the execution that just ended did
// not declare, so that their functions, and what those capture, are not
// kept alive.
func (p *Prompt) forgetUndeclaredTools() {
	if len(p.tools) <= p.toolsDeclared {
		return // all of them were declared
	}
	for name, e := range p.tools {
		if e.Exec != p.execs {
			delete(p.tools, name)
		}
	}
}
