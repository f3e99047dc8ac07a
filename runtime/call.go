package runtime

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/internal/stepmods"
	"github.com/reprompt/reprompt/llm"
)

// Stage 5 of "A step" (doc.go): the request is sent to the model, with
// retries, streaming, and recovery from a request too long.

// call sends req, the request of step rec.Number, and records the reply in
// rec. A request the provider finds too long is sent once more after the
// recovery effects shortened it (see recover). It returns the tools of the
// request sent last that a call may run (see runnable); every failure is a
// *StepError with Op OpModel.
func (r *Runner) call(ctx context.Context, rec *Step, es *effects.Step, req *llm.Request) ([]llm.ToolSpec, error) {
	n := rec.Number
	reply, err := r.callModel(ctx, r.model, req)
	if err != nil && contextTooLong(err) {
		req, reply, err = r.recover(ctx, n, rec, es, err)
	}
	if err != nil {
		return nil, &StepError{Step: n, Op: OpModel, Err: err}
	}
	reply.Message.Role = defs.RoleAssistant
	r.uniqueCallIDs(&reply.Message, n)
	rec.Reply = reply
	r.account(reply.Usage)
	r.ledger.observe(rec.InputTokens, reply.Usage.InputTokens)
	r.usageMu.Lock()
	r.stats.Steps++
	r.usageMu.Unlock()
	if r.offered == nil {
		r.offered = []string{} // non-nil: "none offered" is not "unknown"
	}
	r.offered = r.offered[:0]
	offered := r.runnable(req.Tools)
	for _, t := range offered {
		r.offered = append(r.offered, t.Name)
	}
	return offered, nil
}

// runnable returns the tools of a request that a call may run: all of
// them, but with Config.StableTools those disabled at this step, which the
// request lists without offering them. It returns tools itself when none
// is left out.
func (r *Runner) runnable(tools []llm.ToolSpec) []llm.ToolSpec {
	if !r.cfg.StableTools {
		return tools
	}
	reg := r.c().Registry()
	var out []llm.ToolSpec
	for i, t := range tools {
		off := reg.Disabled(defs.KindTool, t.Name)
		switch {
		case off && out == nil:
			out = append(make([]llm.ToolSpec, 0, len(tools)-1), tools[:i]...)
		case !off && out != nil:
			out = append(out, t)
		}
	}
	if out == nil {
		return tools
	}
	return out
}

func (r *Runner) callModel(ctx context.Context, m llm.Model, req *llm.Request) (*llm.Reply, error) {
	backoff := r.cfg.RetryBackoff
	if backoff <= 0 {
		backoff = time.Second
	}
	for attempt := 0; ; attempt++ {
		reply, err := r.callOnce(ctx, m, req)
		if err == nil || attempt >= r.cfg.Retries || !llm.IsRetryable(err) {
			return reply, err
		}
		d := backoff << attempt
		d = d/2 + rand.N(d/2+1) // jitter: between half and the full backoff
		r.obs.retrying(ctx, attempt, err, d)
		select {
		case <-ctx.Done():
			return nil, errors.Join(err, ctx.Err())
		case <-time.After(d):
		}
	}
}

func (r *Runner) callOnce(ctx context.Context, m llm.Model, req *llm.Request) (*llm.Reply, error) {
	ctx, span := r.obs.modelCalled(ctx, req)
	if r.cfg.ModelTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.cfg.ModelTimeout)
		defer cancel()
	}
	var reply *llm.Reply
	var err error
	if sm, ok := m.(llm.StreamingModel); ok && r.cfg.OnDelta != nil && req.Purpose == llm.PurposeStep {
		reply, err = sm.Stream(ctx, req, r.cfg.OnDelta)
	} else {
		reply, err = m.Generate(ctx, req)
	}
	if err == nil && reply == nil {
		err = errors.New("model returned no reply and no error")
	}
	r.obs.modelReplied(span, reply, err)
	return reply, err
}

// contextTooLong reports whether err is a *ModelError rejecting the
// request as too long. (Its own function, so that the target of errors.As
// is allocated only for a failed call.)
func contextTooLong(err error) bool {
	var me *llm.ModelError
	return errors.As(err, &me) && me.ContextTooLong
}

// recover handles a request rejected as too long: the Recovery effects run
// once, and the request is rendered and sent again.
// The Recovery effects run on the step the BeforeCall effects prepared, so
// the changes those made (limits, variables, appended messages) hold for
// the request sent again.
func (r *Runner) recover(ctx context.Context, n int, rec *Step, es *effects.Step, cause error) (*llm.Request, *llm.Reply, error) {
	ran, ok, err := r.c().Effects().RunRecovery(ctx, es)
	rec.Effects = append(rec.Effects, ran...)
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return nil, nil, cause
	}
	r.unsend()
	req, err := r.request(n, rec, es.Mods())
	if err != nil {
		return nil, nil, err
	}
	rec.Recovered = true
	reply, err := r.callModel(ctx, r.model, req)
	return req, reply, err
}

// unsend makes the request the provider rejected as too long none of the
// ledger's and of cacheMiss's: the request sent again is compared with the
// last one the provider took (and may have cached), not with one it never
// read.
func (r *Runner) unsend() {
	r.ledger.unsend()
	r.prevRec, r.prevGen = r.sentRec, r.sentGen
}

// completer lets effects ask Config.Summarizer (or the run's model) for a
// completion outside the transcript (summaries). Its usage counts in the
// run's stats; each request is recorded in the step's Summaries.
type completer struct{ r *Runner }

func (c completer) Complete(ctx context.Context, system, user string) (string, error) {
	req := &llm.Request{System: system, Messages: []defs.Message{defs.UserMessage(user)}, Agent: c.r.agent, Step: c.r.step, Purpose: llm.PurposeSummary, SessionID: c.r.sessionID}
	m := c.r.cfg.Summarizer
	if m == nil {
		m = c.r.model
	}
	return c.send(ctx, m, req)
}

// continuer is the completer of a run whose completions go to its own
// model: it can continue the run's requests (effects.Continuer).
type continuer struct{ completer }

// Continue sends the tools and system prompt of the last request (or,
// before any, of the prompt as declared), msgs and the instruction. Its
// Repeated says how far it repeats the last request, for an adapter's
// breakpoints.
func (c continuer) Continue(ctx context.Context, msgs []defs.Message, instruction string) (string, error) {
	r := c.r
	req := &llm.Request{Agent: r.agent, Step: r.step, Purpose: llm.PurposeSummary, SessionID: r.sessionID}
	if prev := r.ledger.prev; prev != nil {
		req.System, req.Tools = prev.System, prev.Tools
	} else {
		var none stepmods.Mods
		reg := r.c().Registry()
		sys, err := r.renderer.system(reg, &none)
		if err != nil {
			return "", err
		}
		req.System, req.Tools = sys, r.renderer.tools(reg, &none)
	}
	req.Messages = append(slices.Clip(msgs), defs.UserMessage(instruction))
	if prev := r.ledger.prev; prev != nil && prev.System == req.System && sameTools(prev.Tools, req.Tools) {
		req.Repeated = repeated(prev, commonPrefix(prev.Messages, req.Messages))
	}
	return c.send(ctx, r.model, req)
}

func (c completer) send(ctx context.Context, m llm.Model, req *llm.Request) (string, error) {
	ctx = c.r.obs.summarizing(ctx)
	reply, err := c.r.callModel(ctx, m, req)
	if err == nil {
		c.r.account(reply.Usage)
		if len(req.Tools) > 0 && len(reply.Message.ToolCalls) > 0 {
			// A continued request offers the run's tools: a call is not
			// the answer, and the text before it is the call's preamble.
			err = fmt.Errorf("%w (%s)", effects.ErrCalledTool, reply.Message.ToolCalls[0].Name)
		}
	}
	c.r.recordSummary(req, reply, err)
	if err != nil {
		return "", err
	}
	return reply.Message.Content, nil
}
