package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/reprompt/reprompt/defs"
)

// Version is the latest version of the checkpoint format: this package
// reads every version from 1 to Version and refuses later ones with a
// *VersionError. A checkpoint is written with the lowest version that
// reads it correctly (see Checkpoint.FormatVersion): version 2 added
// Pending.Approvals, which a version 1 reader would misread (it would run
// or interrupt calls that await a person's decision); version 3 added
// RetiredCallIDs, stored beside the head, which a version 2 reader would
// not see (it would give a reused call id the id of a call made before).
const Version = 3

// Checkpoint is what a run needs to continue where it stopped.
//
// A Checkpoint handed to Store.Save is read, not kept: the caller may reuse
// it. A Checkpoint returned by a Store belongs to the caller.
type Checkpoint struct {
	// Version is the format version the checkpoint was written with. Save
	// ignores it and writes FormatVersion(); a loaded checkpoint reports the
	// version it was stored with.
	Version int
	// SessionID names the session. It must not be empty.
	SessionID string
	// Seq numbers the checkpoints of a session: 1, 2, 3… On entry to Save
	// it must be the Seq of the checkpoint this one follows (the one the
	// previous Save set, or that Latest or Rewind returned), or 0 for the
	// first checkpoint of a new session; Save sets it to the new number.
	Seq int64
	// Incarnation tells apart the sessions created one after the other
	// under one SessionID: the first Save of a session (Seq 0) gives it a
	// new random Incarnation and sets it here, and a later Save must carry
	// it over as it carries Seq (Latest, AtStep and Rewind return it), or
	// fail with a *ConflictError. So a worker that loaded a session before
	// it was deleted and created again cannot write into the new session,
	// even once that reaches the worker's Seq. 0 is the incarnation of
	// sessions created before incarnations existed.
	Incarnation int64
	// Step is the number of the next step to run.
	Step int
	// Generation counts rewrites of the transcript. The runtime increments
	// it whenever it rewrites earlier messages (trimming a tool result,
	// compaction); within one generation the transcript of a later
	// checkpoint must extend the transcript of an earlier one.
	Generation int
	// Base is, when Generation is one more than the previous checkpoint's,
	// the number of leading Transcript messages that are unchanged from the
	// previous generation: a store keeps those rows and writes only the
	// rest. 0 means nothing is shared (always the case after Rewind).
	//
	// A rewrite near the tail thus costs only the changed tail, not the
	// whole transcript. Save refuses (*InvalidError) a Base below 0 or
	// above the length of Transcript or of the previous checkpoint's
	// transcript, and a Base above 0 unless Generation is the previous
	// checkpoint's plus one. Save does not change Base; a checkpoint
	// returned by a Store has Base 0, so the caller sets it again for each
	// new generation.
	Base int
	// Transcript is the full logical transcript. A Store writes only the
	// messages not yet stored: those past the previous checkpoint's in the
	// same generation, those from Base on in a new one.
	Transcript []defs.Message
	// State is the JSON of the run's state.Store.
	State json.RawMessage
	// Effects is the JSON of the effects' dependency memory
	// (effects.Manager.Memory).
	Effects json.RawMessage
	// SeenMessages are the identities of the declared messages already
	// added to the transcript (prompt.SeenMessages).
	SeenMessages []string
	// Pending, if not nil, is a step interrupted between the model's reply
	// and the end of its tool calls. The reply is not in Transcript.
	Pending *Pending
	// Stats are the limits used so far.
	Stats Stats
	// RetiredCallIDs are the ids of the tool calls that rewrites of the
	// transcript (compaction) took out of it, in the order they were
	// retired (see runtime.RetiredCallIDsKey). Within a lineage of
	// generations (see Base) the list only grows: a store writes only the
	// ids not yet stored, so that a Save costs what it adds, not the
	// length of the session; Save refuses (*InvalidError) a list shorter
	// than the latest checkpoint's in the same lineage. A checkpoint that
	// starts a lineage (Base 0 in a new generation, as after Rewind)
	// writes its list anew.
	RetiredCallIDs []string
	// Extra holds opaque data of built-in effects (summaries, breakers)
	// and of the runtime, by name.
	Extra map[string]json.RawMessage
	// Done reports that the run ended.
	Done bool
	// Record, if not nil, is the record of the step that just ended: the
	// runtime sets it on the checkpoint it saves at the end of a step, for
	// tools that show a run (see StepRecord). On the checkpoints of a
	// step that paused for approvals or answers (with Pending), it is the
	// record of the step as it paused. Nil in every other checkpoint, and
	// in those saved before records existed.
	Record *StepRecord
}

// Pending is a step whose reply arrived and whose tool calls had not all
// completed.
type Pending struct {
	// Reply is the model's reply, with its tool calls.
	Reply defs.Message `json:"reply"`
	// Results are the results of the calls that completed, each naming its
	// call by CallID. Calls of Reply without a result here did not complete:
	// on resume the runtime gives them an "interrupted" result or runs them.
	Results []defs.ToolResult `json:"results,omitempty"`
	// Offered names the tools the step's request offered; a call of
	// another tool was refused rather than run. Nil in checkpoints that do
	// not record it: then every declared tool counts as offered.
	Offered []string `json:"offered"`
	// Approvals are the calls of Reply that needed a person's decision
	// (prompt.NeedsApproval), in call order, each naming its call once:
	// the step paused until every one is decided. A denied call has its
	// denial in Results; an approved call without a result runs when the
	// run continues, unless Started, which means it was cut short (see
	// Approval). Nil when no call needed one.
	Approvals []Approval `json:"approvals,omitempty"`
	// FinishReason is why the model ended the reply (llm.FinishReason's
	// value), and Sent the user messages that joined the transcript at the
	// start of the step (runtime.Step.Sent): the resumed step's record
	// shows them as the interrupted run would have. Empty in checkpoints
	// written before they were kept.
	FinishReason string         `json:"finish_reason,omitempty"`
	Sent         []defs.Message `json:"sent,omitempty"`
}

// Approval is the state of a tool call that needs a person's decision.
type Approval struct {
	// CallID names a call of Pending.Reply.
	CallID string `json:"call_id"`
	// Decision is Awaiting until a person decides.
	Decision Decision `json:"decision,omitempty"`
	// Started reports that the approved call's tool was started. Without a
	// result in Pending.Results, the run stopped before it returned: on
	// resume it gets an "interrupted" result, or runs again if the tool is
	// idempotent. Only an Approved or Answered call may be Started.
	Started bool `json:"started,omitempty"`
	// Asks are the questions the call asked the user (prompt.Ask), in
	// order, with their answers: a call that asks is Awaiting until its
	// last question is answered, then Answered, and runs again with the
	// answers.
	Asks []Ask `json:"asks,omitempty"`
}

// Ask is a question a tool call asked the user, and the answer once given.
type Ask struct {
	Question string          `json:"question"`
	Schema   json.RawMessage `json:"schema,omitempty"` // of the answer
	Answer   json.RawMessage `json:"answer,omitempty"` // nil until answered
}

// Decision is a person's decision on a tool call.
type Decision string

// The decisions on a tool call.
const (
	Awaiting Decision = ""         // no decision yet
	Approved Decision = "approved" // the call runs
	Denied   Decision = "denied"   // the call does not run; the model gets the reason
	Answered Decision = "answered" // the call's questions are answered: it runs again with the answers
)

// check reports an error when p's approvals are not consistent with its
// reply.
func (p *Pending) check() error {
	if len(p.Approvals) == 0 {
		return nil
	}
	seen := make(map[string]bool, len(p.Approvals))
	for i, a := range p.Approvals {
		switch {
		case !slices.ContainsFunc(p.Reply.ToolCalls, func(c defs.ToolCall) bool { return c.ID == a.CallID }):
			return fmt.Errorf("approval %d names call %q, which the pending reply does not make", i, a.CallID)
		case seen[a.CallID]:
			return fmt.Errorf("approval %d names call %q a second time", i, a.CallID)
		case a.Decision != Awaiting && a.Decision != Approved && a.Decision != Denied && a.Decision != Answered:
			return fmt.Errorf("approval %d of call %q: unknown decision %q", i, a.CallID, a.Decision)
		case a.Started && a.Decision != Approved && a.Decision != Answered:
			return fmt.Errorf("approval %d of call %q: started without being approved or answered", i, a.CallID)
		case a.Decision == Answered && (len(a.Asks) == 0 || a.Asks[len(a.Asks)-1].Answer == nil):
			return fmt.Errorf("approval %d of call %q: answered without an answer", i, a.CallID)
		}
		seen[a.CallID] = true
	}
	return nil
}

// FormatVersion returns the version of the format that Save writes cp
// with: the lowest that reads it correctly. It is 3 when cp has retired
// call ids, 2 when cp has a pending step with approvals, and 1 otherwise.
func (cp *Checkpoint) FormatVersion() int {
	if len(cp.RetiredCallIDs) > 0 {
		return 3
	}
	if cp.Pending != nil && len(cp.Pending.Approvals) > 0 {
		return 2
	}
	return 1
}

// Stats are the limits a run used so far.
type Stats struct {
	Steps        int `json:"steps,omitempty"`
	InputTokens  int `json:"input_tokens,omitempty"`
	OutputTokens int `json:"output_tokens,omitempty"`
	CachedTokens int `json:"cached_tokens,omitempty"`
	// CacheWriteTokens are the input tokens written to the providers'
	// prompt caches, CacheWrite1hTokens the part of them written to
	// entries that live an hour (llm.Usage).
	CacheWriteTokens   int     `json:"cache_write_tokens,omitempty"`
	CacheWrite1hTokens int     `json:"cache_write_1h_tokens,omitempty"`
	Cost               float64 `json:"cost,omitempty"`
	// ReasoningTokens are the part of OutputTokens spent on reasoning
	// (llm.Usage).
	ReasoningTokens int `json:"reasoning_tokens,omitempty"`
	// ElapsedNS is the run's wall time so far, in nanoseconds.
	ElapsedNS int64 `json:"elapsed_ns,omitempty"`
}

// Info describes a stored session: its latest checkpoint.
type Info struct {
	ID   string
	Seq  int64
	Step int
	// Generation is the latest checkpoint's generation.
	Generation int
	// Incarnation is the session's (see Checkpoint.Incarnation).
	Incarnation int64
	Done        bool
	// Updated is when the latest checkpoint was saved.
	Updated time.Time
}

// Store keeps the checkpoints of sessions. Implementations must be safe for
// concurrent use. Package sessiontest checks an implementation.
type Store interface {
	// Save stores cp as the session's latest checkpoint and sets cp.Seq
	// (and cp.Incarnation when it creates the session). It is atomic:
	// after a crash the previous checkpoint is loadable. It fails with a
	// *ConflictError when cp.Seq is not the session's latest Seq (0 for a
	// new session) or cp.Incarnation is not the session's, with an
	// *InvalidError when cp breaks a rule of Checkpoint (empty SessionID,
	// a generation lower than the latest one, a transcript shorter than
	// the latest one of the same generation, a Base out of range or in a
	// generation that does not follow the latest one), and with a
	// *CorruptError when what it keeps about the session's latest
	// checkpoint is damaged (see Plan).
	Save(ctx context.Context, cp *Checkpoint) error
	// Latest returns the session's latest checkpoint, or a *NotFoundError
	// (matching ErrNotFound) for an unknown session.
	Latest(ctx context.Context, id string) (*Checkpoint, error)
	// AtStep returns the checkpoint of the start of step: the last one
	// saved with Step == step and no Pending, or, if there is none, the
	// last one saved with Step == step (a step interrupted mid-way). It
	// returns a *NotFoundError when the session or such a checkpoint does
	// not exist. To continue from it, use Rewind.
	AtStep(ctx context.Context, id string, step int) (*Checkpoint, error)
	// List describes every stored session, ordered by ID.
	List(ctx context.Context) ([]Info, error)
	// Stat describes one session from what the store keeps beside its
	// checkpoints, without decoding them: it works when the latest
	// checkpoint is damaged. An unknown session is a *NotFoundError.
	Stat(ctx context.Context, id string) (Info, error)
	// Delete removes a session and all its checkpoints. Deleting an
	// unknown session is not an error.
	Delete(ctx context.Context, id string) error
}

// Rewind returns the checkpoint of session id at step, prepared to be
// continued: its Seq and Incarnation are the session's latest, its
// Generation one more than the latest generation and its Base 0, so that
// the next Save writes its transcript anew and keeps every earlier
// checkpoint loadable.
func Rewind(ctx context.Context, st Store, id string, step int) (*Checkpoint, error) {
	latest, err := st.Stat(ctx, id) // not Latest: it may be the damaged one
	if err != nil {
		return nil, err
	}
	cp, err := st.AtStep(ctx, id, step)
	if err != nil {
		return nil, err
	}
	cp.Seq = latest.Seq
	cp.Incarnation = latest.Incarnation
	cp.Generation = latest.Generation + 1
	cp.Base = 0
	return cp, nil
}

// ErrNotFound is matched (errors.Is) by a *NotFoundError.
var ErrNotFound = errors.New("session not found")

// ErrCorrupt is matched (errors.Is) by a *CorruptError.
var ErrCorrupt = errors.New("corrupt checkpoint")

// NotFoundError reports an unknown session, or a step without checkpoint.
type NotFoundError struct {
	ID string
	// Step is the step asked for, when AtStep is set.
	Step   int
	AtStep bool
}

func (e *NotFoundError) Error() string {
	if e.AtStep {
		return fmt.Sprintf("session %q: no checkpoint at step %d", e.ID, e.Step)
	}
	return fmt.Sprintf("session %q not found", e.ID)
}

// Unwrap returns ErrNotFound.
func (e *NotFoundError) Unwrap() error { return ErrNotFound }

// CorruptError reports a stored checkpoint that cannot be loaded as it was
// saved: a head or message that does not decode, a missing message.
type CorruptError struct {
	ID  string
	Seq int64
	Err error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("session %q: checkpoint %d is corrupt: %v", e.ID, e.Seq, e.Err)
}

// Unwrap returns the cause.
func (e *CorruptError) Unwrap() error { return e.Err }

// Is reports whether target is ErrCorrupt.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// VersionError reports a checkpoint written by a later version of the
// format than this package reads.
type VersionError struct {
	ID  string
	Seq int64
	Got int // version of the checkpoint
	Max int // highest version this package reads (Version)
}

func (e *VersionError) Error() string {
	s := fmt.Sprintf("checkpoint format version %d is newer than the newest this program reads (%d)", e.Got, e.Max)
	if e.ID != "" {
		s = fmt.Sprintf("session %q: checkpoint %d: %s", e.ID, e.Seq, s)
	}
	return s
}

// ConflictError reports a Save whose checkpoint does not follow the
// session's latest checkpoint: another writer saved in between, the
// session was deleted (and perhaps created again) since the checkpoint was
// loaded, or the caller did not carry Seq and Incarnation over from the
// previous Save.
type ConflictError struct {
	ID     string
	Seq    int64 // cp.Seq on entry to Save
	Latest int64 // the session's latest Seq; 0 if it has none
	// Recreated reports that the Seqs match but the incarnations do not:
	// the session was deleted and created again since cp was loaded (or
	// the caller did not carry Incarnation over: a store that wraps
	// another and copies the checkpoint must copy back Incarnation as it
	// does Seq).
	Recreated bool
}

func (e *ConflictError) Error() string {
	if e.Recreated {
		return fmt.Sprintf("session %q: checkpoint follows seq %d of another incarnation of the session (it was deleted and created again since, or Incarnation was not carried over as Seq is)", e.ID, e.Seq)
	}
	return fmt.Sprintf("session %q: checkpoint follows seq %d but the latest is %d (another writer, or Seq not carried over)", e.ID, e.Seq, e.Latest)
}

// InvalidError reports a checkpoint that Save refuses because it breaks a
// rule of Checkpoint.
type InvalidError struct {
	ID     string
	Reason string
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("session %q: invalid checkpoint: %s", e.ID, e.Reason)
}
