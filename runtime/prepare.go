package runtime

import (
	"context"
	"slices"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/internal/stepmods"
	"github.com/reprompt/reprompt/llm"
)

// Stages 1–4 of "A step" (doc.go): the prompt function is executed, the
// effects due before the call run, and the request is rendered.

// prepare begins a new step and makes its request: it executes the prompt
// function, whose new messages join the transcript, runs the effects due
// before the call, applies their changes, and renders and checks the
// request. It returns the step's record (also on error), the step the
// effects saw (the recovery effects run on it, see recover) and the
// request.
func (r *Runner) prepare(ctx context.Context) (*Step, *effects.Step, *llm.Request, error) {
	n := r.step
	// The record keeps its request apart (see recordRequest): a request
	// allocated with it would keep the transcript's array alive.
	rec := &Step{Number: n, Turn: r.conv.turn, Sent: r.conv.sent}
	reg := r.c().Registry()
	reg.BeginStep()

	// Stages 1–2: execute the prompt function; reconcile definitions.
	added, err := r.execute(ctx, n)
	if err != nil {
		return rec, nil, nil, err
	}
	r.grow(len(added))
	r.transcript = append(r.transcript, added...)

	// Stage 3: the effects before the call.
	es := r.effectStep(n, &r.before)
	ran, err := r.c().Effects().Run(ctx, effects.BeforeCall, es)
	rec.Effects = ran
	if err != nil {
		return rec, nil, nil, err
	}

	// Stage 4: apply their changes, render, check.
	req, err := r.request(n, rec, es.Mods())
	if err != nil {
		return rec, nil, nil, err
	}
	return rec, es, req, nil
}

// effectStep makes es the step effects see at step n and returns it.
func (r *Runner) effectStep(n int, es *effects.Step) *effects.Step {
	reg := r.c().Registry()
	*es = *effects.NewStep(n, slices.Clip(r.transcript))
	es.Tools = reg.Collection(defs.KindTool)
	es.Systems = reg.Collection(defs.KindSystem)
	es.Variables = reg.Collection(defs.KindVariable)
	es.LastTool = r.lastTool
	r.ledger.sync(r.transcript)
	if r.ledger.prev == nil {
		// No request yet: count the system prompt and tools as declared,
		// before any effect changed them.
		var none stepmods.Mods
		if sys, err := r.renderer.system(reg, &none); err == nil {
			r.ledger.fixed(sys, r.renderer.tools(reg, &none))
		}
	}
	es.Budget = effects.Budget{
		Window:  r.cfg.Window,
		Reserve: r.cfg.Reserve,
		Fixed:   r.ledger.scale(r.ledger.sysN + r.ledger.toolN),
		Count:   r.count,
		Prefix:  r.prefix,
	}
	es.Model = r.completer
	es.Stats = r.Stats()
	return es
}

// request applies the effects' changes and renders and checks the request.
func (r *Runner) request(n int, rec *Step, mods *stepmods.Mods) (*llm.Request, error) {
	if mods.Committed && !sameSlice(mods.Transcript, r.transcript) {
		if err := r.commit(mods.Transcript, mods.Room); err != nil {
			return nil, &StepError{Step: n, Op: OpValidate, Err: err}
		}
		rec.Committed = true
	}
	req, verbatim, err := r.render(n, mods)
	if err != nil {
		return nil, err
	}
	if n, ok := r.c().Effects().Committed(r.transcript); ok {
		req.Committed = min(n, verbatim)
	}
	r.recordRequest(rec, req)
	reg := r.c().Registry()
	rec.Disabled = reg.DisabledRefs()
	rec.Reminded = reg.Reminded()
	if err := r.valid.check(r.transcript, req.Messages, verbatim); err != nil {
		return nil, &StepError{Step: n, Op: OpValidate, Err: err}
	}
	r.ledger.sync(r.transcript)
	prev, prevV := r.ledger.prev, r.ledger.prevV
	rec.InputTokens, rec.PrefixTokens = r.ledger.requestTokens(req, verbatim)
	req.Repeated = repeated(prev, r.ledger.matched)
	rec.request.Repeated = req.Repeated
	if prev != nil && r.ledger.matched < len(prev.Messages) {
		rec.Cache = r.cacheMiss(prev, prevV, req, rec, mods)
	}
	r.sentRec, r.sentGen = r.prevRec, r.prevGen
	r.prevRec, r.prevGen = rec, r.generation
	frac := r.cfg.CachedInputFraction
	if frac == 0 {
		frac = llm.DefaultCachedInputFraction
	}
	rec.BilledInput = float64(rec.InputTokens-rec.PrefixTokens) + frac*float64(rec.PrefixTokens)
	return req, nil
}

func (r *Runner) render(n int, mods *stepmods.Mods) (req *llm.Request, verbatim int, err error) {
	reg := r.c().Registry()
	sys, err := r.renderer.system(reg, mods)
	if err != nil {
		return nil, 0, &StepError{Step: n, Op: OpRender, Err: err}
	}
	msgs := slices.Clip(r.transcript)
	verbatim = len(msgs)
	if mods.Viewed {
		msgs, verbatim = slices.Clip(mods.Messages), mods.Verbatim
	}
	if refs := reg.Reminded(); len(refs) > 0 {
		msgs = append(msgs, reminderMessage(refs)) // msgs is clipped: this copies
	}
	req = &llm.Request{System: sys, Messages: msgs, Tools: r.renderer.tools(reg, mods), Agent: r.agent, Step: n, SessionID: r.sessionID}
	if err := r.renderOutput(req); err != nil {
		return nil, 0, &StepError{Step: n, Op: OpRender, Err: err}
	}
	return req, verbatim, nil
}

// repeated returns the Repeated of a request that repeats matched
// messages of prev, the previous request (-1: its system prompt, tools or
// native output differ): all of prev's messages, or its committed part, or
// 0.
func repeated(prev *llm.Request, matched int) int {
	switch {
	case prev == nil || matched < 0:
		return 0
	case matched == len(prev.Messages):
		return matched
	case matched >= prev.Committed:
		return prev.Committed
	}
	return 0
}
