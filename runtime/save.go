package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/session"
)

// Checkpoints (Config.Store): saved at the end of every step (stage 8 of
// "A step", doc.go), after the model's reply and after each tool result;
// and Resume, which continues a run from the latest.

// ErrNoStore is returned by Resume when Config.Store or Config.SessionID is
// not set.
var ErrNoStore = errors.New("resume: Config.Store and Config.SessionID must be set")

// Resume continues the session cfg.SessionID from its latest checkpoint in
// cfg.Store: the transcript, state, effect dependency memory (effects whose
// dependencies did not change do not run again), step number and totals
// are restored, and the next call of Next continues exactly where the run
// stopped. A step interrupted after the model's reply is completed first:
// results saved before the crash are kept, calls of idempotent tools (see
// prompt.Idempotent) without a result are run again, and other calls get
// an explicit "interrupted" error result rather than being run twice.
// A step paused for a person's decision (prompt.NeedsApproval) stays
// paused, with the decisions already made: Runner.Awaiting lists the calls
// still undecided, and the next Next completes the step once they are (an
// approved call that was started before the crash counts as interrupted).
//
// An unknown session is a *session.NotFoundError; a damaged or future
// checkpoint is the store's *session.CorruptError or *session.VersionError.
func Resume(ctx context.Context, model llm.Model, fn prompt.Func, cfg Config) (*Runner, error) {
	if cfg.Store == nil || cfg.SessionID == "" {
		return nil, ErrNoStore
	}
	cp, err := cfg.Store.Latest(ctx, cfg.SessionID)
	if err != nil {
		return nil, err
	}
	r := New(model, fn, cfg)
	if err := r.restore(cp); err != nil {
		return nil, err
	}
	return r, nil
}

// ResumedAt returns the step number the runner continues from and whether
// it was restored from a checkpoint.
func (r *Runner) ResumedAt() (step int, resumed bool) { return r.step, r.seq > 0 }

func (r *Runner) restore(cp *session.Checkpoint) error {
	corrupt := func(err error) error {
		return &session.CorruptError{ID: cp.SessionID, Seq: cp.Seq, Err: err}
	}
	if len(cp.State) > 0 {
		if err := r.p.Store().UnmarshalJSON(cp.State); err != nil {
			return corrupt(err)
		}
	}
	if cp.Step < 0 {
		return corrupt(fmt.Errorf("negative step %d", cp.Step))
	}
	if err := ValidateMessages(cp.Transcript); err != nil {
		return corrupt(fmt.Errorf("transcript: %w", err))
	}
	if cp.Pending != nil {
		if err := checkPendingReply(cp.Transcript, cp.Pending.Reply); err != nil {
			return corrupt(fmt.Errorf("pending reply: %w", err))
		}
	}
	if err := r.restoreRetired(cp); err != nil {
		return corrupt(err)
	}
	if err := r.c().Effects().Restore(cp.Effects); err != nil {
		return corrupt(err)
	}
	if err := r.restoreConversation(cp); err != nil {
		return corrupt(err)
	}
	r.c().MarkMessagesSeen(cp.SeenMessages)
	r.transcript = cp.Transcript
	r.step = cp.Step
	r.seq, r.incarnation = cp.Seq, cp.Incarnation
	r.generation, r.savedGen = cp.Generation, cp.Generation
	r.saved = cp.Transcript
	r.done = cp.Done
	r.pending = cp.Pending
	r.restored = cp.Pending != nil
	if cp.Pending != nil {
		r.approvals = slices.Clone(cp.Pending.Approvals)
		if rec := cp.Record; rec != nil && rec.Step == cp.Step {
			r.recorder.paused = rec // for the record that completes the step
		}
	}
	st := cp.Stats
	r.stats = effects.RunStats{Steps: st.Steps, InputTokens: st.InputTokens, OutputTokens: st.OutputTokens, CachedTokens: st.CachedTokens,
		CacheWriteTokens: st.CacheWriteTokens, CacheWrite1hTokens: st.CacheWrite1hTokens, Cost: st.Cost}
	r.usage = llm.Usage{InputTokens: st.InputTokens, OutputTokens: st.OutputTokens, CachedTokens: st.CachedTokens,
		CacheWriteTokens: st.CacheWriteTokens, CacheWrite1hTokens: st.CacheWrite1hTokens, ReasoningTokens: st.ReasoningTokens}
	r.elapsed0 = time.Duration(st.ElapsedNS)
	r.lastTool = lastToolResult(r.transcript)
	return nil
}

// checkpoint returns the checkpoint of the run as it stands.
func (r *Runner) checkpoint(done bool, pending *session.Pending) (*session.Checkpoint, error) {
	st, err := r.p.Store().MarshalJSON()
	if err != nil {
		return nil, err
	}
	extra, err := r.conversationExtra(nil)
	if err != nil {
		return nil, err
	}
	s := r.Stats()
	r.usageMu.Lock()
	reasoning := r.usage.ReasoningTokens // not in RunStats
	r.usageMu.Unlock()
	return &session.Checkpoint{
		SessionID:    r.cfg.SessionID,
		Seq:          r.seq,
		Incarnation:  r.incarnation,
		Step:         r.step,
		Generation:   r.generation,
		Transcript:   r.transcript,
		State:        st,
		Effects:      r.c().Effects().Memory(),
		SeenMessages: r.c().SeenMessages(),
		Pending:      pending,
		Stats: session.Stats{Steps: s.Steps, InputTokens: s.InputTokens, OutputTokens: s.OutputTokens,
			CachedTokens: s.CachedTokens, CacheWriteTokens: s.CacheWriteTokens, CacheWrite1hTokens: s.CacheWrite1hTokens,
			Cost: s.Cost, ReasoningTokens: reasoning, ElapsedNS: int64(s.Elapsed)},
		RetiredCallIDs: r.retiredList[:len(r.retiredList):len(r.retiredList)],
		Extra:          extra,
		Done:           done,
	}, nil
}

// save writes a checkpoint if the run has a store. It does not stop for the
// cancellation of ctx, so that a cancelled run leaves a consistent
// checkpoint.
func (r *Runner) save(ctx context.Context, done bool, pending *session.Pending) error {
	if r.cfg.Store == nil {
		return nil
	}
	r.saveMu.Lock()
	defer r.saveMu.Unlock()
	cp, err := r.checkpoint(done, pending)
	if err != nil {
		return err
	}
	if pending != nil {
		cp.Record = r.recorder.paused // the paused step's, if it paused
	} else {
		cp.Record = r.recorder.take() // set at the end of a step only
		switch {
		case cp.Record != nil:
			r.conv.record = cp.Record
		case r.conv.startingTurn && r.conv.record != nil && r.conv.record.Step == cp.Step-1:
			// A new turn replaces, as the checkpoint at the start of
			// cp.Step (Store.AtStep), the one that ended the step before:
			// it keeps that step's record, which the step viewer reads.
			cp.Record = r.conv.record
		}
	}
	if r.generation > r.savedGen {
		// A rewrite since the last save: one new generation, sharing with
		// the saved transcript the messages before the first changed one,
		// so the store writes only the rest.
		cp.Generation = r.savedGen + 1
		cp.Base = sharedPrefix(r.saved, r.transcript)
	}
	if err := r.cfg.Store.Save(context.WithoutCancel(ctx), cp); err != nil {
		return err
	}
	r.seq, r.incarnation = cp.Seq, cp.Incarnation
	r.generation, r.savedGen = cp.Generation, cp.Generation
	r.saved = r.transcript
	return nil
}

// sharedPrefix returns how many leading messages of b are those of a,
// unchanged. Rewrites copy the transcript and share the text of the
// messages they keep, so the comparison is mostly of pointers.
func sharedPrefix(a, b []defs.Message) int {
	n := 0
	for n < len(a) && n < len(b) && a[n].Identical(b[n]) {
		n++
	}
	return n
}

// savePending saves the step interrupted between reply and the end of its
// tool calls: the transcript without the reply, the reply, and the results
// completed so far.
func (r *Runner) savePending(ctx context.Context, reply defs.Message, results []defs.ToolResult) error {
	if r.cfg.Store == nil {
		return nil
	}
	return r.save(ctx, false, &session.Pending{Reply: reply, Results: append([]defs.ToolResult(nil), results...), Offered: r.offered, Approvals: r.approvals,
		FinishReason: string(r.pendFinish), Sent: r.pendSent})
}

// resumePending completes a step interrupted by a crash after the model's
// reply, or paused for approvals once every call is decided.
func (r *Runner) resumePending(ctx context.Context) (*Step, error) {
	p := r.pending
	r.pending = nil
	n := r.step
	rec := &Step{Number: n, Turn: r.conv.turn, Resumed: r.restored, Sent: p.Sent,
		Reply: &llm.Reply{Message: p.Reply, FinishReason: llm.FinishReason(p.FinishReason)}}
	r.pendFinish, r.pendSent = rec.Reply.FinishReason, p.Sent
	r.restored = false
	defer func() {
		if r.pending == nil { // not paused again for a question (ask.go)
			r.approvals = nil
		}
	}()
	r.setAnswers(r.approvals)
	reg := r.c().Registry()
	reg.BeginStep()
	// Executed again to declare the tools and effects; messages it
	// declares for the first time (the state changed since) belong to the
	// next step, as in a run that was not interrupted.
	added, err := r.execute(ctx, n)
	if err != nil {
		return rec, err
	}
	r.c().Forget(added)
	r.offered = p.Offered
	given := make(map[string]defs.ToolResult, len(p.Reply.ToolCalls))
	for _, res := range p.Results {
		given[res.CallID] = res
	}
	var offered []llm.ToolSpec
	started := false
	for _, c := range p.Reply.ToolCalls {
		if _, ok := given[c.ID]; ok {
			continue
		}
		if p.Offered != nil && !slices.Contains(p.Offered, c.Name) {
			continue // refused as in the interrupted run: not offered at this step
		}
		// A call that needed approval (see approval.go): an approved call
		// runs once, marked as started first, so that a crash while it runs
		// does not run it again.
		i := slices.IndexFunc(r.approvals, func(a session.Approval) bool { return a.CallID == c.ID })
		if i >= 0 {
			a := &r.approvals[i]
			switch {
			case (a.Decision == session.Approved || a.Decision == session.Answered) && !a.Started:
				a.Started, started = true, true
				offered = append(offered, llm.ToolSpec{Name: c.Name})
				continue
			case a.Decision == session.Denied: // its denial is in p.Results; never lost
				given[c.ID] = denial(c, "")
				continue
			}
		}
		// Run again only an idempotent tool that was approved or needs no
		// approval: a call that needed one is never run without it.
		def, ok := reg.Lookup(defs.KindTool, c.Name)
		if ok && def.Tool.Idempotent && (i >= 0 || def.Tool.NeedsApproval == nil) || !ok && r.isAnswerCall(c.Name) { // validating an answer again is safe
			offered = append(offered, llm.ToolSpec{Name: c.Name})
			continue
		}
		given[c.ID] = defs.ToolResult{CallID: c.ID, Name: c.Name, Arguments: c.Arguments, IsError: true,
			Content: fmt.Sprintf("error: tool call interrupted: the run stopped before %q returned, and it was not run again", c.Name)}
		rec.Interrupted = append(rec.Interrupted, c.ID)
	}
	rec.Decisions = decisions(p, r.approvals, given)
	if started {
		if err := r.savePending(ctx, p.Reply, p.Results); err != nil {
			return rec, &StepError{Step: n, Op: OpCheckpoint, Err: err}
		}
	}
	return r.complete(ctx, rec, offered, given)
}

// lastToolResult rebuilds the last tool result of a transcript, with the
// arguments of its call.
func lastToolResult(msgs []defs.Message) *defs.ToolResult {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role != defs.RoleTool {
			continue
		}
		res := &defs.ToolResult{CallID: m.ToolCallID, Name: m.Name, Content: m.Content, IsError: m.IsError}
		for j := i - 1; j >= 0 && res.Arguments == nil; j-- {
			for _, c := range msgs[j].ToolCalls {
				if c.ID == m.ToolCallID {
					res.Arguments = c.Arguments
				}
			}
		}
		return res
	}
	return nil
}
