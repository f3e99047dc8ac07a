package runtime

import (
	"fmt"
	"slices"
	"strings"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/internal/stepmods"
	"github.com/reprompt/reprompt/llm"
)

// Why a prompt cache missed (Step.Cache). The ledger finds, at no cost, how
// far the request repeats the previous one (ledger.matched); only a step
// whose prefix broke before the end of the previous request pays for
// cacheMiss, which names the first difference and what caused it.

// sysDiff is the first difference between the parts of the system prompt
// rendered last and those of the one before, set by renderer.system.
type sysDiff struct {
	set      bool
	old, new sysPart
	hasOld   bool // old is set: a part was changed or removed
	hasNew   bool // new is set: a part was changed or declared
}

// diffParts returns the first difference between old and new parts.
func diffParts(old, new []sysPart) sysDiff {
	i := 0
	for i < len(old) && i < len(new) && old[i] == new[i] {
		i++
	}
	d := sysDiff{set: true}
	if i < len(old) {
		d.old, d.hasOld = old[i], true
	}
	if i < len(new) {
		d.new, d.hasNew = new[i], true
	}
	if d.hasOld && d.hasNew && d.old.name != d.new.name {
		// Not the same part: one was removed or declared before it.
		if slices.ContainsFunc(new, func(p sysPart) bool { return p.name == d.old.name && p.variable == d.old.variable }) {
			d.hasOld = false
		} else {
			d.hasNew = false
		}
	}
	return d
}

// cacheMiss says why req, whose prefix broke before the end of prev (the
// previous request), repeats only part of it. rec is the step's record (its
// Disabled, Reminded, Committed and Effects set) and mods the effects'
// changes; prevV is how many of prev's messages were the transcript's.
func (r *Runner) cacheMiss(prev *llm.Request, prevV int, req *llm.Request, rec *Step, mods *stepmods.Mods) string {
	switch {
	case prev.System != req.System:
		return r.systemMiss(rec, mods)
	case !sameTools(prev.Tools, req.Tools):
		return r.toolsMiss(prev.Tools, req.Tools, rec, mods)
	case !sameNativeOutput(prev.Output, req.Output):
		return "output schema changed"
	}
	k := r.ledger.matched // the system prompt, tools and output matched: set
	if k < 0 {
		k = commonPrefix(prev.Messages, req.Messages)
	}
	if k < len(req.Messages) && isReminder(req.Messages[k]) {
		return "reminder " + refList(rec.Reminded) + " added" + r.remindedBy(rec.Reminded)
	}
	if k < len(prev.Messages) && isReminder(prev.Messages[k]) {
		s := "reminder of step " + fmt.Sprint(prev.Step) + " dropped"
		if p := r.prevRec; p != nil && p.Number == prev.Step {
			s = "reminder " + refList(p.Reminded) + " of step " + fmt.Sprint(prev.Step) + " dropped" + paren(byEffects(p.Effects, effects.BeforeCall))
		}
		return s
	}
	if r.generation != r.prevGen {
		if rec.Committed {
			return "transcript rewritten by commit" + paren(byEffects(rec.Effects, effects.BeforeCall))
		}
		if p := r.prevRec; p != nil {
			return "transcript rewritten by commit" + paren(byEffects(p.Effects, effects.AfterReply))
		}
		return "transcript rewritten by commit"
	}
	what := fmt.Sprintf("message %d", k)
	if k < len(prev.Messages) {
		what += " (" + string(prev.Messages[k].Role) + ")"
	}
	if k >= prevV && k < len(prev.Messages) {
		// Not a transcript message: the previous step's view added it.
		s := what + " of the view of step " + fmt.Sprint(prev.Step) + " dropped"
		if p := r.prevRec; p != nil && p.Number == prev.Step {
			s += paren(byEffects(p.Effects, effects.BeforeCall))
		}
		return s
	}
	if mods.Viewed {
		return what + " changed in the view" + byEffects(rec.Effects, effects.BeforeCall)
	}
	return what + " changed"
}

// systemMiss says which part of the system prompt changed first.
func (r *Runner) systemMiss(rec *Step, mods *stepmods.Mods) string {
	d := r.renderer.diff
	if !d.set {
		return "system prompt changed"
	}
	part := func(p sysPart) (where, name string, kind defs.Kind) {
		if p.variable {
			return "<variables>", p.name, defs.KindVariable
		}
		return "<" + p.name + ">", p.name, defs.KindSystem
	}
	switch {
	case d.hasOld && d.hasNew:
		where, name, _ := part(d.new)
		s := "prefix broke in " + where + ": " + name + " changed"
		if short(d.old.text) && short(d.new.text) {
			s += " (" + quoteEmpty(d.old.text) + " → " + quoteEmpty(d.new.text) + ")"
		}
		if slices.ContainsFunc(mods.Variables, func(v stepmods.Variable) bool { return v.Name == name }) {
			s += ", set" + byEffects(rec.Effects, effects.BeforeCall)
		}
		return s
	case d.hasNew:
		where, name, kind := part(d.new)
		if r.wasDisabled(kind, name) {
			return "prefix broke in " + where + ": " + kind.String() + ":" + name + " enabled again"
		}
		return "prefix broke in " + where + ": " + kind.String() + ":" + name + " declared"
	case d.hasOld:
		where, name, kind := part(d.old)
		if ref := (defs.Ref{Kind: kind, Name: name}); slices.Contains(rec.Disabled, ref) {
			return "prefix broke in " + where + ": " + kind.String() + ":" + name + " withdrawn (disabled" + r.disabledBy(ref) + ")"
		}
		if kind == defs.KindSystem && mods.Systems != nil && !slices.Contains(mods.Systems, name) {
			return "prefix broke in " + where + ": " + kind.String() + ":" + name + " withdrawn (limited" + byEffects(rec.Effects, effects.BeforeCall) + ")"
		}
		return "prefix broke in " + where + ": " + kind.String() + ":" + name + " removed"
	}
	return "system prompt changed"
}

// toolsMiss says how the tool list changed first.
func (r *Runner) toolsMiss(old, new []llm.ToolSpec, rec *Step, mods *stepmods.Mods) string {
	i := 0
	for i < len(old) && i < len(new) && sameSpec(old[i], new[i]) {
		i++
	}
	has := func(ts []llm.ToolSpec, name string) bool {
		return slices.ContainsFunc(ts, func(t llm.ToolSpec) bool { return t.Name == name })
	}
	switch {
	case i < len(old) && i < len(new) && old[i].Name == new[i].Name:
		if old[i].Description != new[i].Description {
			return "tool list changed: " + new[i].Name + " description changed"
		}
		return "tool list changed: " + new[i].Name + " schema changed"
	case i < len(old) && !has(new, old[i].Name):
		name := old[i].Name
		if ref := (defs.Ref{Kind: defs.KindTool, Name: name}); slices.Contains(rec.Disabled, ref) {
			return "tool list changed: " + name + " withdrawn (disabled" + r.disabledBy(ref) + ")"
		}
		if mods.Tools != nil && !slices.Contains(mods.Tools, name) {
			return "tool list changed: " + name + " withdrawn (limited" + byEffects(rec.Effects, effects.BeforeCall) + ")"
		}
		return "tool list changed: " + name + " removed"
	case i < len(new):
		name := new[i].Name
		if r.wasDisabled(defs.KindTool, name) {
			return "tool list changed: " + name + " enabled again"
		}
		return "tool list changed: " + name + " declared"
	}
	return "tool list changed"
}

// disabledBy returns who disabled ref at this step: " by effect ID" for
// the effect that disabled it first, else " by the prompt function".
func (r *Runner) disabledBy(ref defs.Ref) string {
	if by, _ := r.c().Registry().DisabledBy(ref.Kind, ref.Name); by != "" {
		return " by effect " + by
	}
	return " by the prompt function"
}

// remindedBy returns who reminded refs: " (by effect ID)" naming the
// effects that reminded them first, with "the prompt function" for those
// it reminded.
func (r *Runner) remindedBy(refs []defs.Ref) string {
	var who []string
	for _, ref := range refs {
		by, _ := r.c().Registry().RemindedBy(ref.Kind, ref.Name)
		if by == "" {
			by = "the prompt function"
		} else {
			by = "effect " + by
		}
		if !slices.Contains(who, by) {
			who = append(who, by)
		}
	}
	if len(who) == 0 {
		return ""
	}
	return " (by " + strings.Join(who, ", ") + ")"
}

// wasDisabled reports whether the previous request left the definition out
// as disabled.
func (r *Runner) wasDisabled(kind defs.Kind, name string) bool {
	return r.prevRec != nil && slices.Contains(r.prevRec.Disabled, defs.Ref{Kind: kind, Name: name})
}

// byEffects returns " by effect ID" naming the effects of the phase that
// ran, or "" when none did.
func byEffects(ran []effects.Ran, phase effects.Phase) string {
	var ids []string
	for _, e := range ran {
		if e.Phase == phase {
			ids = append(ids, e.ID)
		}
	}
	switch len(ids) {
	case 0:
		return ""
	case 1:
		return " by effect " + ids[0]
	}
	return " by effects " + strings.Join(ids, ", ")
}

func refList(refs []defs.Ref) string {
	s := make([]string, len(refs))
	for i, r := range refs {
		s[i] = r.Kind.String() + ":" + r.Name
	}
	return strings.Join(s, ", ")
}

func isReminder(m defs.Message) bool { return m.Meta["reminder"] == "true" }

// short reports whether a value is worth quoting in a one-line cause.
func short(s string) bool { return len(s) <= 40 && !strings.Contains(s, "\n") }

// quoteEmpty returns s, or "" quoted when it is empty.
func quoteEmpty(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

// paren returns " (effect X)" for " by effect X", and "" for "".
func paren(by string) string {
	if by == "" {
		return ""
	}
	return " (" + strings.TrimPrefix(by, " by ") + ")"
}
