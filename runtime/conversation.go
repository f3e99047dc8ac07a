package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/session"
)

// A conversation is a run that goes on with the user's next message. The
// runner keeps the transcript, the state, the effects' memory and the
// definitions from turn to turn; with a store, each turn is checkpointed
// like any step, so a conversation continues after a crash or in another
// process from the store alone.
//
//	r := runtime.New(model, chat, cfg)
//	for line := range lines {
//		res, err := r.Continue(ctx, line)
//		...
//		fmt.Println(res.Text)
//	}

// conversation is the runner's part of a conversation.
type conversation struct {
	mu    sync.Mutex
	inbox []defs.Message // messages sent and not yet in the transcript (Send)

	turn        int
	turnMessage string
	turnStart   int             // the step the turn began at: Config.MaxSteps counts a turn's steps
	turnSaved   turnInfo        // the turn turnJSON encodes
	turnJSON    json.RawMessage // its JSON, for the checkpoints of the turn
	turnStarted bool            // the first turn has begun (a step ran, or it was restored)
	sent        []defs.Message  // the messages that joined at the step under way
	checkedNew  bool            // the session id was checked unused (see checkNewSession)
	// answer is the last typed answer (Step.Output), kept in checkpoints so
	// that a resumed runner still has it (Result.Output).
	answer json.RawMessage
	// record is the record of the last step that ended (the checkpoint
	// that ended it has it), and startingTurn reports the save of a new
	// turn, before its first step: that checkpoint keeps the record too,
	// since it is the one Store.AtStep returns for the start of the step
	// (see save).
	record       *session.StepRecord
	startingTurn bool

	// Messages posted through the store (inbox.go), all on the runner's
	// goroutine.
	posted  int64 // Seq of the last post in the transcript: the cursor kept in checkpoints (InboxKey)
	fetched int64 // Seq of the last post read into the inbox (≥ posted)
	polled  bool  // waitingMessages just read the store: takeMessages need not again
	pollErr error // what that read failed with, for takeMessages to report
}

// Keys of session.Checkpoint.Extra the runtime writes for a conversation.
const (
	// TurnKey holds the turn the conversation is on: {"number": n,
	// "message": "...", "start": the step it began at}.
	TurnKey = "runtime.turn"
	// AnswerKey holds the run's last typed answer (JSON), once it has one.
	AnswerKey = "runtime.answer"
	// InboxKey holds, once a message posted through the store
	// (session.Inbox) joined the transcript, the Seq of the last one that
	// did: the run's cursor in its session's posts.
	InboxKey = "runtime.inbox"
)

type turnInfo struct {
	Number  int    `json:"number"`
	Message string `json:"message,omitempty"`
	Start   int    `json:"start,omitempty"` // the step the turn began at
}

// Send adds a user message to the conversation. It is safe to call from
// any goroutine, while a step runs: the message joins the transcript at the
// start of the next step, after the messages sent before it, and that
// step's record lists it (Step.Sent). Messages sent to a run that is
// paused for approval wait until the paused step is completed (a step
// whose reply is pending cannot take a message between the reply and its
// tool results). Sent to a finished run, a message starts the next turn
// when Run or Next is called (see Continue).
//
// A message sent is held in memory until the step that takes it saves its
// checkpoint: a process that dies before that loses it.
func (r *Runner) Send(text string) {
	r.conv.mu.Lock()
	r.conv.inbox = append(r.conv.inbox, defs.UserMessage(text))
	r.conv.mu.Unlock()
}

// Continue adds the user's next message to the conversation and runs until
// the model answers (or the run pauses or fails), as Run does: Send(text)
// then Run. On a finished run the message starts a new turn: the prompt
// function sees it in Prompt.Turn. On a fresh runner it is the first
// turn's message. With a store, the new turn is saved before the model is
// called: two processes that continue one session at once cannot both
// succeed, and the one that loses gets a *StepError with Op OpCheckpoint
// wrapping a *session.ConflictError, before any model request.
//
// The Result holds the steps of this turn (Result.Steps); the transcript,
// state and totals are those of the whole conversation.
func (r *Runner) Continue(ctx context.Context, text string) (*Result, error) {
	r.Send(text)
	return r.Run(ctx)
}

// Turn returns the turn the conversation is on (see prompt.Turn).
func (r *Runner) Turn() (number int, message string) { return r.conv.turn, r.conv.turnMessage }

// turnSteps returns the steps run in the current turn, which
// Config.MaxSteps bounds.
func (r *Runner) turnSteps() int { return r.step - r.conv.turnStart }

// hasSent reports whether messages wait in the inbox.
func (r *Runner) hasSent() bool {
	r.conv.mu.Lock()
	defer r.conv.mu.Unlock()
	return len(r.conv.inbox) > 0
}

// takeSent empties the inbox. The posts read into it join with the rest:
// the cursor moves past them.
func (r *Runner) takeSent() []defs.Message {
	r.conv.mu.Lock()
	defer r.conv.mu.Unlock()
	msgs := r.conv.inbox
	r.conv.inbox = nil
	r.conv.posted = r.conv.fetched
	return msgs
}

// takeMessages is called by Next before a step: it appends the messages
// sent since the last step, and those posted through the store (inbox.go),
// to the transcript, starting a new turn when the run had finished, and
// returns them for the step's record. ok is false when the run is finished
// and nothing was sent. A new turn is saved before the step runs, and so
// is the first turn of a session that the store does not hold yet: of two
// processes that start one session at once, the second then fails before
// asking its model too.
func (r *Runner) takeMessages(ctx context.Context) (sent []defs.Message, ok bool, err error) {
	if r.pending != nil {
		return nil, !r.done, nil // the paused or interrupted step first
	}
	if r.done && r.err != nil {
		return nil, false, nil
	}
	if err := r.pollOnce(ctx); err != nil {
		return nil, false, &StepError{Step: r.step, Op: OpCheckpoint, Err: err}
	}
	if r.done && !r.hasSent() {
		return nil, false, nil
	}
	sent = r.takeSent()
	if len(sent) == 0 {
		return nil, true, nil
	}
	newTurn := r.done
	first := !r.conv.turnStarted && r.seq == 0 // nothing saved yet
	if newTurn {
		r.done, r.closed = false, false
		if r.conv.turnStarted {
			r.conv.turn++
		}
		r.conv.turnStart = r.step
	}
	if newTurn || !r.conv.turnStarted {
		r.conv.turnMessage = sent[0].Content
		r.conv.turnStart = r.step
		r.c().SetTurn(r.conv.turn, r.conv.turnMessage)
	}
	r.conv.turnStarted = true
	r.grow(len(sent))
	r.transcript = append(r.transcript, sent...)
	if newTurn || first {
		r.conv.startingTurn = newTurn
		err := r.save(ctx, false, nil)
		r.conv.startingTurn = false
		if err != nil {
			return sent, true, &StepError{Step: r.step, Op: OpCheckpoint, Err: err}
		}
	}
	return sent, true, nil
}

// SessionExistsError is a new run (New, Run) given a Config.SessionID that
// its store already holds: its first checkpoint would conflict with the
// stored session's. It is reported before any model request. To go on with
// the stored session, Resume it (and Continue it, for a conversation); to
// start over, use another id or delete the session.
type SessionExistsError struct {
	ID string
}

func (e *SessionExistsError) Error() string {
	return fmt.Sprintf("session %q already exists: resume it (runtime.Resume) or continue it (Runner.Continue after Resume), or use a new id", e.ID)
}

// checkNewSession fails with a *SessionExistsError when the store already
// holds the session of a runner that was not restored from it. It asks the
// store once, before the runner's first step.
func (r *Runner) checkNewSession(ctx context.Context) error {
	if r.conv.checkedNew || r.cfg.Store == nil || r.cfg.SessionID == "" || r.seq > 0 {
		return nil
	}
	r.conv.checkedNew = true
	_, err := r.cfg.Store.Latest(ctx, r.cfg.SessionID)
	var nf *session.NotFoundError
	switch {
	case err == nil:
		return &SessionExistsError{ID: r.cfg.SessionID}
	case errors.As(err, &nf):
		return nil
	default:
		return &StepError{Step: r.step, Op: OpCheckpoint, Err: err}
	}
}

// conversationExtra adds the turn, the answer and the cursor in the posts
// to a checkpoint's Extra.
func (r *Runner) conversationExtra(extra map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	if !r.conv.turnStarted && r.conv.answer == nil && r.conv.posted == 0 {
		return extra, nil
	}
	if extra == nil {
		extra = make(map[string]json.RawMessage, 3)
	}
	if r.conv.posted > 0 {
		extra[InboxKey] = strconv.AppendInt(nil, r.conv.posted, 10)
	}
	if r.conv.turnStarted {
		// Encoded once a turn, not at every save: a turn's checkpoints
		// all hold the same.
		t := turnInfo{Number: r.conv.turn, Message: r.conv.turnMessage, Start: r.conv.turnStart}
		if r.conv.turnJSON == nil || t != r.conv.turnSaved {
			b, err := json.Marshal(t)
			if err != nil {
				return nil, err
			}
			r.conv.turnJSON, r.conv.turnSaved = b, t
		}
		extra[TurnKey] = r.conv.turnJSON
	}
	if r.conv.answer != nil {
		extra[AnswerKey] = r.conv.answer
	}
	return extra, nil
}

// restoreConversation reads the turn, the answer and the cursor in the
// posts of a checkpoint.
func (r *Runner) restoreConversation(cp *session.Checkpoint) error {
	if raw, ok := cp.Extra[TurnKey]; ok {
		var t turnInfo
		if err := json.Unmarshal(raw, &t); err != nil {
			return fmt.Errorf("%s: %w", TurnKey, err)
		}
		if t.Number < 0 || t.Start < 0 || t.Start > cp.Step {
			return fmt.Errorf("%s: turn %d starting at step %d, at step %d", TurnKey, t.Number, t.Start, cp.Step)
		}
		r.conv.turn, r.conv.turnMessage, r.conv.turnStart, r.conv.turnStarted = t.Number, t.Message, t.Start, true
		r.c().SetTurn(t.Number, t.Message)
	} else if cp.Step > 0 || len(cp.Transcript) > 0 {
		r.conv.turnStarted = true // a run saved before turns were recorded: its first turn
	}
	if raw, ok := cp.Extra[AnswerKey]; ok {
		if !json.Valid(raw) {
			return fmt.Errorf("%s: not valid JSON", AnswerKey)
		}
		r.conv.answer = slices.Clone(raw)
	}
	if cp.Pending == nil && cp.Record != nil && cp.Record.Step == cp.Step-1 {
		r.conv.record = cp.Record // for the checkpoint of the next turn's start
	}
	if raw, ok := cp.Extra[InboxKey]; ok {
		var seq int64
		if err := json.Unmarshal(raw, &seq); err != nil || seq < 0 {
			return fmt.Errorf("%s: %s is not the number of a post", InboxKey, raw)
		}
		r.conv.posted, r.conv.fetched = seq, seq
	}
	r.conv.checkedNew = true
	return nil
}
