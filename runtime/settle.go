package runtime

import (
	"context"
	"fmt"
	"slices"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/llm"
)

// Stages 7–8 of "A step" (doc.go): the typed answer is settled, the
// effects after the reply run, the transcript they commit is kept, and the
// step's record is completed; and the accounting of the run's usage.

// settle ends a step whose reply and tool results joined the transcript:
// it accepts or refuses a typed answer (see settleOutput), runs the
// effects due after the reply and keeps the transcript they commit,
// completes rec and decides whether the run goes on (rec.Done). endErr is
// the error the run ends with at this completed step (ErrMaxSteps wrapped,
// an *OutputError); err is a failure of the step.
func (r *Runner) settle(ctx context.Context, rec *Step, stopTool bool) (endErr, err error) {
	n := rec.Number
	reply := rec.Reply
	answered, feedback, outErr := r.settleOutput(rec)
	if feedback != nil {
		r.grow(1)
		r.transcript = append(r.transcript, *feedback)
	}

	// Stage 7: the effects after the reply.
	es := r.effectStep(n, &r.after)
	es.Reply = &reply.Message
	es.Results = rec.ToolResults
	ran, err := r.c().Effects().Run(ctx, effects.AfterReply, es)
	rec.Effects = append(rec.Effects, ran...)
	if err != nil {
		return nil, err
	}
	if mods := es.Mods(); mods.Committed {
		if err := r.commit(mods.Transcript, mods.Room); err != nil {
			return nil, &StepError{Step: n, Op: OpValidate, Err: err}
		}
		rec.Committed = true
	}

	// Stage 8: the record, and whether the run goes on (the checkpoint
	// is save's).
	rec.State = r.stateSnapshot()
	r.step++
	switch {
	case outErr != nil:
		rec.Done = true
		endErr = outErr
	case answered, stopTool, len(reply.Message.ToolCalls) == 0 && feedback == nil:
		rec.Done = true
	case r.cfg.StopWhen != nil && r.cfg.StopWhen(rec):
		rec.Done = true
	case r.maxSteps() > 0 && r.turnSteps() >= r.maxSteps(): // a conversation's turn (conversation.go)
		rec.Done = true
		endErr = fmt.Errorf("%w: %d steps, and the model still called tools", ErrMaxSteps, r.maxSteps())
	}
	r.recorder.end(rec)
	return endErr, nil
}

// grow makes room for n more transcript messages. An array that grew by
// appending grows by doubling: step records keep the arrays their requests
// were made from, and append's growth by a quarter for long slices would
// leave about four times the final transcript behind in them, doubling
// about once. The first growth after a commit (a transcript rewritten by
// an effect, often at every step) grows as append does: doubling there
// would only make every step's array larger.
func (r *Runner) grow(n int) {
	if len(r.transcript)+n <= cap(r.transcript) {
		return
	}
	if r.appended {
		n = max(n, len(r.transcript))
	}
	r.transcript = slices.Grow(r.transcript, n)
	r.appended = true
}

// sameSlice reports whether a and b are the same slice of the same array.
func sameSlice(a, b []defs.Message) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// commit replaces the transcript with msgs after checking it. With room,
// the spare capacity of msgs is the runtime's: the messages the step adds
// next are appended there instead of into a copy.
func (r *Runner) commit(msgs []defs.Message, room bool) error {
	keep, err := r.valid.checkCommit(r.transcript, msgs)
	if err != nil {
		return err
	}
	// The call ids msgs drops stay used (see uniqueCallIDs, callids.go).
	// When the validator keeps its state, msgs keeps the ids it read.
	gone, kept := r.transcript, msgs
	if keep {
		gone, kept = gone[r.valid.n:], kept[r.valid.n:]
	}
	r.retire(gone, kept)
	r.obs.committed(r.transcript, msgs)
	r.recorder.commit(len(r.transcript), len(msgs))
	r.transcript = msgs
	if !room {
		r.transcript = slices.Clip(msgs)
	}
	r.appended = false
	if !keep {
		r.valid.reset()
	}
	r.generation++
	return nil
}

// stateSnapshot returns a shallow copy of the state for a step record:
// the previous step's when the store did not change since.
func (r *Runner) stateSnapshot() map[string]any {
	store := r.p.Store()
	v := store.Version() // before the copy: a change after it makes the next step copy again
	if r.state == nil || v != r.stateVersion {
		r.state, r.stateVersion = store.Snapshot(), v
	}
	return r.state
}

// account adds u to the run's usage and cost. Sub-agents running in
// parallel tool calls account into their parent concurrently.
func (r *Runner) account(u llm.Usage) {
	r.usageMu.Lock()
	defer r.usageMu.Unlock()
	r.usage.InputTokens += u.InputTokens
	r.usage.OutputTokens += u.OutputTokens
	r.usage.CachedTokens += u.CachedTokens
	r.usage.ReasoningTokens += u.ReasoningTokens
	r.usage.CacheWriteTokens += u.CacheWriteTokens
	r.usage.CacheWrite1hTokens += u.CacheWrite1hTokens
	r.stats.InputTokens += u.InputTokens
	r.stats.OutputTokens += u.OutputTokens
	r.stats.CachedTokens += u.CachedTokens
	r.stats.CacheWriteTokens += u.CacheWriteTokens
	r.stats.CacheWrite1hTokens += u.CacheWrite1hTokens
	r.stats.Cost += r.cfg.Pricing.Cost(u)
}

func (r *Runner) maxSteps() int {
	if r.cfg.MaxSteps == 0 {
		return DefaultMaxSteps
	}
	return r.cfg.MaxSteps
}
