package effects

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/internal/callsite"
)

// Func is an effect. It runs when its dependencies say it is due, with the
// step it may inspect and modify. A returned error aborts the run with an
// *Error naming the effect.
type Func func(ctx context.Context, s *Step) error

// Phase is when in a step an effect runs.
type Phase uint8

const (
	// BeforeCall effects run after the prompt function executed and before
	// the request is rendered and sent. It is the default.
	BeforeCall Phase = iota
	// AfterReply effects run after the model's reply and the tool results
	// it asked for were appended to the transcript.
	AfterReply
)

// String returns "before-call" or "after-reply".
func (p Phase) String() string {
	if p == AfterReply {
		return "after-reply"
	}
	return "before-call"
}

// Option changes how an effect is registered.
type Option interface{ apply(*registration) }

type optionFunc func(*registration)

func (f optionFunc) apply(r *registration) { f(r) }

// Key identifies the effect by an explicit key instead of its registration
// order, so it keeps its dependency memory even when it is registered
// conditionally, in another order, or in a loop over a list that changes
// (effects.Key(item)). Keys must be unique within an execution.
func Key(key string) Option { return optionFunc(func(r *registration) { r.key = key }) }

// InPhase sets the phase the effect runs in.
func InPhase(p Phase) Option { return optionFunc(func(r *registration) { r.phase = p }) }

// Recovery marks an effect that can shrink the context (compaction): when
// the provider rejects a step's request as too long, it runs again, due or
// not, with Step.ContextTooLong set, and the request is sent once more.
func Recovery() Option { return optionFunc(func(r *registration) { r.recovery = true }) }

type registration struct {
	recovery bool
	index    int     // position among unkeyed registrations, -1 when keyed
	key      string  // explicit key, or ""
	pc       uintptr // where it was registered (see callsite.CallerPC)
	phase    Phase
	deps     Deps
	fn       Func
	slot     *slot
}

// slot is the memory of one effect across executions.
type slot struct {
	id       string
	pc       uintptr // where it was registered last; 0 after Restore
	ran      bool
	deps     []string
	cleanups []func()
	seen     bool // registered in the current execution
	pos      int  // position among all registrations of the last execution that registered it
	// rewrites is set when the effect's last run declared (Step.WillRewrite)
	// that its next run may rewrite of from message from on.
	rewrites bool
	from     int
	of       []defs.Message
}

// Manager holds the effects of one prompt across the executions of its
// function: the prompt registers them at every execution (prompt.Prompt's
// Effect hook), and a runtime runs those that are due at every step and
// saves their dependency memory with its checkpoints. An effect author
// never uses it; it is exported for the runtimes that drive prompts.
// Registration and Run must be called from one goroutine at a time (the one
// executing the prompt).
//
// The zero Manager is ready to use.
type Manager struct {
	slots []*slot
	keyed map[string]*slot
	regs  []registration
	ran   []Ran // the effects a run ran, kept for the next run (see run)
	npos  int
	err   error
	step  int // the step of the last Run, named by cleanup errors
	// The call sites of the unkeyed registrations, in order, in this
	// execution and in the last one that ended without error (hasPrev is
	// false after Restore).
	sites, prevSites []uintptr
	hasPrev          bool
	onRun            func(id string) // see OnRun
}

// OnRun sets fn to be called with an effect's ID just before it runs and
// with "" once it returned (or panicked): the prompt's definitions
// registry (defs.Registry.SetActor) attributes the disables and reminders
// made in between to that effect.
func (m *Manager) OnRun(fn func(id string)) { m.onRun = fn }

// ReasonKind says why an effect ran.
type ReasonKind uint8

// Reasons an effect ran.
const (
	// ReasonFirst: the effect had never run.
	ReasonFirst ReasonKind = iota + 1
	// ReasonAlways: the effect has no dependency list and runs every step.
	ReasonAlways
	// ReasonChanged: at least one dependency changed since the last run.
	ReasonChanged
	// ReasonRecovery: the provider rejected the request as too long and the
	// effect was registered with Recovery.
	ReasonRecovery
)

// Reason explains why an effect ran.
type Reason struct {
	Kind ReasonKind `json:"kind"`
	// Changes lists the dependencies that changed, for ReasonChanged.
	Changes []Change `json:"changes,omitempty"`
}

// Change is one dependency that changed.
type Change struct {
	Index int    `json:"index"`
	Name  string `json:"name,omitempty"`
	From  string `json:"from"`
	To    string `json:"to"`
}

// String returns "first run", "every step" or what changed, for example
// "count: 1 → 2" or "deps[1]: \"a\" → \"b\"".
func (r Reason) String() string {
	switch r.Kind {
	case ReasonFirst:
		return "first run"
	case ReasonAlways:
		return "every step"
	case ReasonRecovery:
		return "context too long: recovery"
	case ReasonChanged:
		parts := make([]string, len(r.Changes))
		for i, c := range r.Changes {
			name := c.Name
			if name == "" {
				name = fmt.Sprintf("deps[%d]", c.Index)
			}
			parts[i] = fmt.Sprintf("%s: %s → %s", name, c.From, c.To)
		}
		return strings.Join(parts, ", ")
	}
	return "unknown"
}

// Ran records one effect that ran.
type Ran struct {
	// ID is "#n" for the n-th unkeyed effect (from 0) or "key:..." for a
	// keyed one.
	ID     string `json:"id"`
	Site   string `json:"site"`
	Phase  Phase  `json:"phase"`
	Reason Reason `json:"reason"`
}

// Error is an effect that failed: it returned an error or panicked, or one
// of its cleanups panicked.
type Error struct {
	ID    string
	Site  string // where the effect was registered
	Step  int
	Phase Phase
	// PanicSite is where the panic happened, for a panicking effect or
	// cleanup.
	PanicSite string
	// Cleanup reports a panic in a cleanup the effect registered
	// (Step.Cleanup), run before the effect's next run, when the effect is
	// no longer registered, or when the run ends. Step is then the step of
	// the last effects run.
	Cleanup bool
	Err     error
}

func (e *Error) Error() string {
	if e.Cleanup {
		return fmt.Sprintf("cleanup of effect %s (registered at %s) panicked at %s after step %d: %v", e.ID, e.Site, e.PanicSite, e.Step, e.Err)
	}
	if e.PanicSite != "" {
		return fmt.Sprintf("effect %s (registered at %s) panicked at %s at step %d: %v", e.ID, e.Site, e.PanicSite, e.Step, e.Err)
	}
	return fmt.Sprintf("effect %s (registered at %s) failed at step %d: %v", e.ID, e.Site, e.Step, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// HookOrderError reports unkeyed effects registered in another order or
// number than on the previous execution, so that matching them by position
// would give one effect another's dependency memory. Two cases:
//
//   - an effect registered at a position where an effect from another call
//     site was registered before (typically an effect inside an if): Was and
//     Now are the two call sites;
//   - a call site that registered a different number of unkeyed effects
//     than on the previous execution (an effect registered in a loop over a
//     list that changed): Was and Now are both that call site, and PrevCount
//     and Count the two numbers.
//
// Either way the fix is effects.Key: an effect with a key keeps its own
// memory wherever and however often it is registered.
type HookOrderError struct {
	// Index is the position among unkeyed effects where the order broke:
	// for a loop, the position of the site's first effect.
	Index int
	Was   string // call site remembered at this position
	Now   string // call site registering at this position now
	// Count and PrevCount are the numbers of effects the call site Now
	// registered on this execution and the previous one; both are 0 unless
	// the numbers differ.
	Count, PrevCount int
}

func (e *HookOrderError) Error() string {
	if e.Count != e.PrevCount {
		return fmt.Sprintf("the call site %s registered %d unkeyed effects, but %d on the previous execution: "+
			"effects registered in a loop are matched by position, so one would get another's dependency memory; "+
			"give each one a key, for example effects.Key(item)", e.Now, e.Count, e.PrevCount)
	}
	return fmt.Sprintf("effect #%d is registered at %s, but at %s on the previous execution: "+
		"effects changed order (an effect inside an if or a loop?); register effects unconditionally or give them effects.Key", e.Index, e.Now, e.Was)
}

// DuplicateKeyError reports two effects registered with the same key in one
// execution.
type DuplicateKeyError struct {
	Key        string
	First, Now string
}

func (e *DuplicateKeyError) Error() string {
	return fmt.Sprintf("effect key %q registered twice: at %s and at %s", e.Key, e.First, e.Now)
}

// Begin starts an execution of the prompt function.
func (m *Manager) Begin() {
	clear(m.regs)
	m.regs = m.regs[:0]
	m.npos = 0
	m.err = nil
	m.sites = m.sites[:0]
	for _, s := range m.keyed {
		s.seen = false
	}
}

// Register registers an effect for the current execution. pc is the
// program counter of its call site (callsite.CallerPC): effects are
// identified by their position or key, and pc only tells a changed
// registration order and names the sites in errors. A misuse is reported
// by End.
func (m *Manager) Register(pc uintptr, deps Deps, fn Func, opts ...Option) {
	site := pc
	r := registration{index: -1, pc: pc, deps: deps, fn: fn}
	if len(opts) > 0 {
		r = withOptions(r, opts)
	}
	if r.key != "" {
		if m.keyed == nil {
			m.keyed = make(map[string]*slot)
		}
		s, ok := m.keyed[r.key]
		switch {
		case !ok:
			s = &slot{id: "key:" + r.key, pc: site}
			m.keyed[r.key] = s
		case s.seen && m.err == nil:
			m.err = &DuplicateKeyError{Key: r.key, First: callsite.Name(s.pc), Now: callsite.Name(site)}
		}
		s.seen, s.pc = true, site
		r.slot = s
	} else {
		r.index = m.npos
		m.npos++
		m.sites = append(m.sites, site)
		if r.index < len(m.slots) {
			s := m.slots[r.index]
			if s.pc != 0 && s.pc != site && m.err == nil {
				m.err = &HookOrderError{Index: r.index, Was: callsite.Name(s.pc), Now: callsite.Name(site)}
			}
			s.pc = site
			r.slot = s
		} else {
			r.slot = &slot{id: fmt.Sprintf("#%d", r.index), pc: site}
			m.slots = append(m.slots, r.slot)
		}
	}
	r.slot.pos = len(m.regs)
	m.regs = append(m.regs, r)
}

// withOptions returns r with opts applied. (A function of its own: the
// options take r's address, which moves it to the heap.)
func withOptions(r registration, opts []Option) registration {
	for _, o := range opts {
		o.apply(&r)
	}
	return r
}

// End finishes an execution. Effects registered before but not in this
// execution (a shorter list of unkeyed effects, keys not registered again)
// have their cleanups run, in the order they were registered, and their
// memory dropped. It returns the first misuse seen during the execution
// (*HookOrderError, *DuplicateKeyError), or the *Error of cleanups that
// panicked.
func (m *Manager) End() error {
	if err := m.loopError(); err != nil {
		return err
	}
	if m.err != nil {
		return m.err
	}
	m.sites, m.prevSites, m.hasPrev = m.prevSites, m.sites, true
	var gone []*slot
	for i := m.npos; i < len(m.slots); i++ {
		gone = append(gone, m.slots[i])
		m.slots[i] = nil
	}
	m.slots = m.slots[:m.npos]
	for k, s := range m.keyed {
		if !s.seen {
			gone = append(gone, s)
			delete(m.keyed, k)
		}
	}
	return m.cleanUp(gone)
}

// cleanUp runs the cleanups of slots in the order they were last
// registered, all of them even when some panic, and returns the errors of
// those that did.
func (m *Manager) cleanUp(slots []*slot) error {
	slices.SortStableFunc(slots, func(a, b *slot) int { return a.pos - b.pos })
	var errs []error
	for _, s := range slots {
		if err := m.runCleanups(s); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// loopError reports the first call site, in registration order, that
// registered a different number of unkeyed effects than on the previous
// execution, when it registered more than one either time: effects in a
// loop. (One effect that is registered or not is an effect inside an if,
// which the position check reports when it matters.)
func (m *Manager) loopError() error {
	if !m.hasPrev || slices.Equal(m.sites, m.prevSites) {
		return nil // the same sites in the same order: the same counts
	}
	counts, prevCounts := countSites(m.sites), countSites(m.prevSites)
	for i := range m.regs {
		r := &m.regs[i]
		if r.index < 0 || r.pc == 0 {
			continue
		}
		now, was := counts[r.pc], prevCounts[r.pc]
		if was > 0 && now != was && max(now, was) > 1 {
			name := callsite.Name(r.pc)
			return &HookOrderError{Index: r.index, Was: name, Now: name, Count: now, PrevCount: was}
		}
	}
	return nil
}

// countSites counts the registrations of each call site.
func countSites(sites []uintptr) map[uintptr]int {
	counts := make(map[uintptr]int, len(sites))
	for _, s := range sites {
		counts[s]++
	}
	return counts
}

// runCleanups runs the cleanups of s in the order they were registered. A
// panic stops them and is returned as an *Error naming the effect.
func (m *Manager) runCleanups(s *slot) error {
	fns := s.cleanups
	s.cleanups = nil
	for _, f := range fns {
		if err := callCleanup(f); err != nil {
			return &Error{ID: s.id, Site: callsite.Name(s.pc), Step: m.step, Cleanup: true, PanicSite: err.site, Err: err.err}
		}
	}
	return nil
}

func callCleanup(f func()) (pe *panicError) {
	defer func() {
		if v := recover(); v != nil {
			pe = recovered(v)
		}
	}()
	f()
	return nil
}

// Committed returns how many leading messages of transcript the
// registered effects declared, at their last run, that they will not
// rewrite at their next one (Step.WillRewrite): the part before the
// earliest declared rewrite, at most len(transcript). A declaration made
// over another transcript (one an effect committed since) counts only for
// the messages the two still share. ok is false when no registered effect
// declared anything: the effects that do not declare may rewrite anything.
func (m *Manager) Committed(transcript []defs.Message) (n int, ok bool) {
	n = len(transcript)
	for i := range m.regs {
		sl := m.regs[i].slot
		if !sl.rewrites {
			continue
		}
		ok = true
		from := min(sl.from, len(sl.of))
		if from > 0 && (len(transcript) == 0 || &sl.of[0] != &transcript[0]) {
			// Declared over another transcript: only the messages the two
			// share from the start keep the promise (a compaction that
			// replaced the transcript moved what the effect will rewrite).
			k := 0
			for k < from && k < len(transcript) && sl.of[k].Identical(transcript[k]) {
				k++
			}
			from = k
		}
		n = min(n, from)
	}
	return n, ok
}

// Run runs, in registration order, the effects of the given phase that are
// due, and returns those that ran. s is the step they see; Run sets its
// Phase. The first failing effect stops Run with an *Error.
func (m *Manager) Run(ctx context.Context, phase Phase, s *Step) ([]Ran, error) {
	return m.run(ctx, phase, s, false)
}

// RunRecovery runs the BeforeCall effects registered with Recovery, due or
// not, with s.ContextTooLong set. It reports ok=false when there is none.
func (m *Manager) RunRecovery(ctx context.Context, s *Step) (ran []Ran, ok bool, err error) {
	for i := range m.regs {
		if m.regs[i].recovery && m.regs[i].phase == BeforeCall {
			ok = true
		}
	}
	if !ok {
		return nil, false, nil
	}
	s.ContextTooLong = true
	ran, err = m.run(ctx, BeforeCall, s, true)
	return ran, true, err
}

func (m *Manager) run(ctx context.Context, phase Phase, s *Step, recovery bool) ([]Ran, error) {
	// The effects that ran are collected in m.ran, kept from run to run,
	// and returned in a slice of their own of the right size.
	ran := m.ran[:0]
	m.ran = nil // a run started by an effect of this one would have its own
	defer func() { clear(ran); m.ran = ran[:0] }()
	spare := 0 // room left for the after-reply effects, which the runtime appends
	s.Phase = phase
	for i := range m.regs {
		r := &m.regs[i]
		if r.phase != phase || (recovery && !r.recovery) {
			if phase == BeforeCall && !recovery && r.phase == AfterReply {
				spare++
			}
			continue
		}
		due, reason, enc := decide(r)
		if recovery {
			due, reason = true, Reason{Kind: ReasonRecovery}
		}
		if !due {
			continue
		}
		m.step = s.Number
		if err := m.runCleanups(r.slot); err != nil {
			return ranCopy(ran, 0), err
		}
		site := callsite.Name(r.pc)
		r.slot.rewrites, r.slot.of = false, nil // each run declares anew
		s.current = r.slot
		if m.onRun != nil {
			m.onRun(r.slot.id)
		}
		err := call(ctx, r.fn, s)
		if m.onRun != nil {
			m.onRun("")
		}
		s.current = nil
		r.slot.ran, r.slot.deps = true, enc
		ran = append(ran, Ran{ID: r.slot.id, Site: site, Phase: phase, Reason: reason})
		if err != nil {
			ee := &Error{ID: r.slot.id, Site: site, Step: s.Number, Phase: phase, Err: err}
			if p, ok := err.(*panicError); ok {
				ee.PanicSite, ee.Err = p.site, p.err
			}
			return ranCopy(ran, 0), ee
		}
	}
	return ranCopy(ran, spare), nil
}

// ranCopy returns a copy of ran with room for spare more, or nil when ran
// is empty.
func ranCopy(ran []Ran, spare int) []Ran {
	if len(ran) == 0 {
		return nil
	}
	return append(make([]Ran, 0, len(ran)+spare), ran...)
}

// decide reports whether r is due and why, with its encoded dependencies.
func decide(r *registration) (bool, Reason, []string) {
	if isAlways(r.deps) {
		if !r.slot.ran {
			return true, Reason{Kind: ReasonFirst}, nil
		}
		return true, Reason{Kind: ReasonAlways}, nil
	}
	if r.slot.ran && depsUnchanged(r.deps, r.slot.deps) {
		return false, Reason{}, r.slot.deps
	}
	enc, names := encodeDeps(r.deps)
	if !r.slot.ran {
		return true, Reason{Kind: ReasonFirst}, enc
	}
	prev := r.slot.deps
	var changes []Change
	for i, v := range enc {
		if i < len(prev) && prev[i] == v {
			continue
		}
		from := "<none>"
		if i < len(prev) {
			from = prev[i]
		}
		c := Change{Index: i, From: abbreviate(from), To: abbreviate(v)}
		if names != nil {
			c.Name = names[i]
		}
		changes = append(changes, c)
	}
	if len(prev) > len(enc) {
		changes = append(changes, Change{Index: len(enc), From: abbreviate(prev[len(enc)]), To: "<none>"})
	}
	if changes == nil {
		return false, Reason{}, enc
	}
	return true, Reason{Kind: ReasonChanged, Changes: changes}, enc
}

func abbreviate(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return s[:max-1] + "…"
}

type panicError struct {
	site string
	err  error
}

func (p *panicError) Error() string { return p.err.Error() }

func call(ctx context.Context, fn Func, s *Step) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = recovered(v)
		}
	}()
	return fn(ctx, s)
}

// recovered makes a recovered panic value an error with the panic's site.
// Call it from the deferred function that recovers.
func recovered(v any) *panicError {
	site := callsite.Panic().String()
	perr, ok := v.(error)
	if !ok {
		perr = fmt.Errorf("panic: %v", v)
	}
	return &panicError{site: site, err: perr}
}

// Close runs every cleanup still registered, effect by effect in the order
// the effects were last registered (keyed and unkeyed alike), and each
// effect's cleanups in the order they were registered. It runs them all
// even when some panic, and returns the *Error of each effect whose cleanup
// panicked (joined with errors.Join). Cleanups run once: a second Close
// runs nothing. The runtime calls it when a run ends.
func (m *Manager) Close() error {
	slots := slices.Clone(m.slots)
	for _, s := range m.keyed {
		slots = append(slots, s)
	}
	return m.cleanUp(slots)
}

// memory is the persistent part of the effects of a prompt: which effects
// already ran and with which dependency values, as Manager.Memory writes it
// in JSON, so that a resumed run does not run again effects whose
// dependencies did not change.
type memory struct {
	Slots []slotMemory          `json:"slots,omitempty"`
	Keyed map[string]slotMemory `json:"keyed,omitempty"`
}

// slotMemory is the memory of one effect.
type slotMemory struct {
	Ran  bool     `json:"ran"`
	Deps []string `json:"deps,omitempty"`
}

// emptyMemory is the memory of a prompt whose effects never ran.
var emptyMemory = json.RawMessage(`{}`)

// Memory returns the dependency memory as JSON, for a checkpoint: which
// effects ran, by position or key, and the encoded values of their
// dependencies. It holds no call site, so it restores under a build whose
// code moved.
func (m *Manager) Memory() json.RawMessage {
	if len(m.slots) == 0 && len(m.keyed) == 0 {
		return emptyMemory
	}
	var mem memory
	if len(m.slots) > 0 {
		mem.Slots = make([]slotMemory, 0, len(m.slots))
	}
	for _, s := range m.slots {
		mem.Slots = append(mem.Slots, slotMemory{Ran: s.ran, Deps: s.deps})
	}
	if len(m.keyed) > 0 {
		mem.Keyed = make(map[string]slotMemory, len(m.keyed))
		for k, s := range m.keyed {
			mem.Keyed[k] = slotMemory{Ran: s.ran, Deps: s.deps}
		}
	}
	raw, err := json.Marshal(mem)
	if err != nil {
		panic(err) // strings and bools only: cannot fail
	}
	return raw
}

// Restore replaces the manager's memory with raw, as Memory wrote it (an
// empty raw is no memory). Call sites are not part of the memory: the first
// execution after Restore records them anew. It fails, changing nothing,
// when raw is not such JSON.
func (m *Manager) Restore(raw json.RawMessage) error {
	var mem memory
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &mem); err != nil {
			return fmt.Errorf("effects memory: %w", err)
		}
	}
	m.hasPrev = false
	m.slots = m.slots[:0]
	for i, sm := range mem.Slots {
		m.slots = append(m.slots, &slot{id: fmt.Sprintf("#%d", i), ran: sm.Ran, deps: sm.Deps})
	}
	m.keyed = make(map[string]*slot, len(mem.Keyed))
	for k, sm := range mem.Keyed {
		m.keyed[k] = &slot{id: "key:" + k, ran: sm.Ran, deps: sm.Deps}
	}
	return nil
}
