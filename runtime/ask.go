package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/session"
)

// A tool that asks the user a question (prompt.Ask) pauses the run as a
// call that needs approval does: the step's other calls keep their
// results, the step is checkpointed as pending with the question, and the
// run waits until the user answers (Answer) or declines (Deny). The call
// then runs again, from its start, with the answers so far.

// Errors of questions. Test them with errors.Is.
var (
	// ErrAwaitingAnswer: Approve named a call that asked a question: it
	// takes an answer (Answer), or a refusal (Deny).
	ErrAwaitingAnswer = errors.New("the tool call awaits an answer, not an approval")
	// ErrNoQuestion: Answer named a call that asked nothing.
	ErrNoQuestion = errors.New("the tool call asked no question")
)

// asking holds, for the step under way, the questions its calls asked and
// the answers they are run again with.
type asking struct {
	mu      sync.Mutex
	asked   map[string]*prompt.AskError // by call id
	answers map[string][]json.RawMessage
}

// noteAsk records that call id asked a question.
func (r *Runner) noteAsk(id string, ae *prompt.AskError) {
	r.asking.mu.Lock()
	defer r.asking.mu.Unlock()
	if r.asking.asked == nil {
		r.asking.asked = make(map[string]*prompt.AskError)
	}
	r.asking.asked[id] = ae
}

// takeAsks returns the questions asked since the last call.
func (r *Runner) takeAsks() map[string]*prompt.AskError {
	r.asking.mu.Lock()
	defer r.asking.mu.Unlock()
	a := r.asking.asked
	r.asking.asked = nil
	return a
}

// answersFor returns the answers call id runs again with.
func (r *Runner) answersFor(id string) []json.RawMessage {
	r.asking.mu.Lock()
	defer r.asking.mu.Unlock()
	return r.asking.answers[id]
}

// setAnswers records the answers of the calls of a paused step, from its
// approvals, for the calls run again.
func (r *Runner) setAnswers(approvals []session.Approval) {
	r.asking.mu.Lock()
	defer r.asking.mu.Unlock()
	r.asking.answers = nil
	for _, a := range approvals {
		for _, q := range a.Asks {
			if q.Answer == nil {
				break
			}
			if r.asking.answers == nil {
				r.asking.answers = make(map[string][]json.RawMessage)
			}
			r.asking.answers[a.CallID] = append(r.asking.answers[a.CallID], q.Answer)
		}
	}
}

// pauseForAnswers ends a step whose calls asked questions: the calls that
// did not ask keep their results, and the step is checkpointed as pending
// with the questions, as pause does for approvals.
func (r *Runner) pauseForAnswers(ctx context.Context, rec *Step, asks map[string]*prompt.AskError) (*Step, error) {
	reply := rec.Reply.Message
	var done []defs.ToolResult
	for i, c := range reply.ToolCalls {
		ae, ok := asks[c.ID]
		if !ok {
			if i < len(rec.ToolResults) {
				done = append(done, rec.ToolResults[i])
			}
			continue
		}
		j := slices.IndexFunc(r.approvals, func(a session.Approval) bool { return a.CallID == c.ID })
		if j < 0 {
			r.approvals = append(r.approvals, session.Approval{CallID: c.ID})
			j = len(r.approvals) - 1
		}
		a := &r.approvals[j]
		a.Decision, a.Started = session.Awaiting, false
		a.Asks = append(slices.Clip(a.Asks), session.Ask{Question: ae.Question.Text, Schema: ae.Question.Schema})
		rec.Awaiting = append(rec.Awaiting, PendingApproval{Step: rec.Number, CallID: c.ID, Tool: c.Name, Arguments: c.Arguments,
			Question: ae.Question.Text, Schema: ae.Question.Schema})
	}
	rec.ToolResults = done
	r.pending = &session.Pending{Reply: reply, Results: done, Offered: r.offered, Approvals: r.approvals}
	rec.State = r.stateSnapshot()
	r.recorder.pause(rec) // kept by the checkpoints until the step completes
	if err := r.savePending(ctx, reply, done); err != nil {
		return rec, &StepError{Step: rec.Number, Op: OpCheckpoint, Err: err}
	}
	return rec, nil
}

// Answer answers the question the call callID of the paused step asked
// (prompt.Ask), with answer: a value of the question's type, or its JSON as
// a json.RawMessage. The answer is validated against the question's JSON
// Schema (PendingApproval.Schema); one that does not match is an error,
// and nothing is recorded. Once every call of the step is decided, the run
// continues (Next or Run) and the call runs again with its answers. With a
// store, the answer is checkpointed before Answer returns, as a decision
// of Approve is.
//
// A call that asked nothing is an *ApprovalError matching ErrNoQuestion; an
// unknown call, an already answered one and a closed runner are errors as
// for Approve.
func (r *Runner) Answer(callID string, answer any) error {
	fail := func(err error, decided session.Decision) error {
		return &ApprovalError{Op: "answer", CallID: callID, Decided: decided, Awaiting: r.awaitingIDs(), Err: err}
	}
	if r.closed || r.err != nil {
		return fail(ErrDone, session.Awaiting)
	}
	i := slices.IndexFunc(r.approvals, func(a session.Approval) bool { return a.CallID == callID })
	if r.pending == nil || i < 0 {
		return fail(ErrUnknownCall, session.Awaiting)
	}
	a := &r.approvals[i]
	if a.Decision != session.Awaiting {
		return fail(ErrAlreadyDecided, a.Decision)
	}
	if len(a.Asks) == 0 {
		return fail(ErrNoQuestion, session.Awaiting)
	}
	raw, ok := answer.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(answer); err != nil {
			return fail(fmt.Errorf("encoding the answer: %w", err), session.Awaiting)
		}
	}
	q := &a.Asks[len(a.Asks)-1]
	if err := (prompt.Question{Text: q.Question, Schema: q.Schema}).Validate(raw); err != nil {
		return fail(err, session.Awaiting)
	}
	q.Answer, a.Decision = slices.Clone(raw), session.Answered
	if err := r.savePending(context.Background(), r.pending.Reply, r.pending.Results); err != nil {
		q.Answer, a.Decision = nil, session.Awaiting
		return &StepError{Step: r.step, Op: OpCheckpoint, Err: err}
	}
	return nil
}

// hasQuestion reports whether the approval a waits for an answer.
func hasQuestion(a session.Approval) bool {
	return len(a.Asks) > 0 && a.Asks[len(a.Asks)-1].Answer == nil
}
