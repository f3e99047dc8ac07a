package session

import (
	"context"
	"fmt"

	"github.com/reprompt/reprompt/defs"
)

// Inbox is implemented by a Store that also keeps messages posted to its
// sessions by other processes: a user's next message written by a web
// handler or a CLI (reprompt send) while a worker runs the session. The
// runtime takes the messages posted to a running session at the start of
// its next step, and those posted to a finished one when it is run again
// (see runtime.Config.Store). Memory and the stores of packages
// session/sqlite and session/postgres implement it; it is not part of
// Store, so that stores written before it keep compiling.
//
// Implementations must be safe for concurrent use, by goroutines and, for
// a store shared by processes, by processes. Package sessiontest checks
// an implementation (Run does, for a store that implements Inbox).
type Inbox interface {
	// Post adds msg to the messages posted to session id and returns its
	// sequence number. Numbers are assigned per session in the order posts
	// are committed: 1, 2, 3…, each one more than the previous, so that a
	// reader that saw post n has seen every post before it (a cursor never
	// skips a post that commits later). It fails with a *NotFoundError for
	// a session the store does not hold (no checkpoint saved yet, or
	// deleted), so that messages cannot pile up for a session nobody runs,
	// and with an *InvalidError for a message that CheckPost refuses.
	// Posts are kept until the session is deleted.
	Post(ctx context.Context, id string, msg defs.Message) (seq int64, err error)
	// Posted returns the messages posted to session id with a sequence
	// number above after, in order. It returns none (and no error) when
	// there are none, and for a session the store does not hold: a run
	// asks before its first checkpoint. A stored post that cannot be
	// decoded is a *CorruptError (its Seq is 0: it names no checkpoint;
	// its Err names the post). The slice belongs to the caller.
	Posted(ctx context.Context, id string, after int64) ([]Post, error)
}

// Post is a message posted to a session (Inbox).
type Post struct {
	// Seq is the post's number in its session, from 1.
	Seq int64
	// Message is the message as posted: a user message.
	Message defs.Message
}

// CheckPost reports, as an *InvalidError naming session id, whether msg
// may not be posted: a posted message joins the transcript as the user's,
// so it must be a user message (defs.RoleUser) without tool calls or tool
// call id. Stores call it in Post.
func CheckPost(id string, msg defs.Message) error {
	switch {
	case id == "":
		return &InvalidError{ID: id, Reason: "a post needs a session id"}
	case msg.Role != defs.RoleUser:
		return &InvalidError{ID: id, Reason: fmt.Sprintf("a posted message must be a user message, not %q", msg.Role)}
	case len(msg.ToolCalls) > 0 || msg.ToolCallID != "":
		return &InvalidError{ID: id, Reason: "a posted message cannot make or answer tool calls"}
	}
	return nil
}

// DecodePost decodes the stored form (EncodeMessage's) of post seq of
// session id. A post that does not decode, or that CheckPost refuses, is
// a *CorruptError.
func DecodePost(id string, seq int64, data []byte) (Post, error) {
	m, err := DecodeMessage(data)
	if err == nil {
		err = CheckPost(id, m)
	}
	if err != nil {
		return Post{}, &CorruptError{ID: id, Err: fmt.Errorf("posted message %d: %w", seq, err)}
	}
	return Post{Seq: seq, Message: m}, nil
}
