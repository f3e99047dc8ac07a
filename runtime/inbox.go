package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/session"
)

// Messages posted through the store. When Config.Store implements
// session.Inbox, another process (a web handler, `reprompt send`) steers a
// run by posting to its session: the runner reads the posts after its
// cursor once at the start of each step, where Send's messages join, and
// the posts join the transcript in the order of their numbers, after the
// messages sent in process, listed in Step.Sent. A run paused for a
// decision reads none until the paused step is completed. A finished run
// reads them when Run, Next or Continue is called: they start the next
// turn.
//
// The cursor (the Seq of the last post that joined) is kept in each
// checkpoint (InboxKey), with the transcript it joined: after a crash, a
// post joins exactly once, since it is read again unless the checkpoint
// that holds it was saved. A session resumed from a rewound checkpoint
// (session.Rewind) has that checkpoint's cursor: the posts after it join
// again.

// ErrNoInbox is returned by Post when the store does not implement
// session.Inbox.
var ErrNoInbox = errors.New("the session store does not take posted messages (session.Inbox)")

// Post posts text as the user's message to session id through st, for the
// process that runs the session to take at its next step (or, if the run
// has finished, when it is run again): see Config.Store. It returns the
// post's number in the session. It fails with ErrNoInbox when st does not
// implement session.Inbox, and with a *session.NotFoundError when st does
// not hold the session. It is safe for concurrent use, from any process
// that opens the store.
func Post(ctx context.Context, st session.Store, id, text string) (int64, error) {
	in, ok := st.(session.Inbox)
	if !ok {
		return 0, ErrNoInbox
	}
	return in.Post(ctx, id, defs.UserMessage(text))
}

// poll reads the posts after the last one read into the inbox, if the
// store takes posts: one query.
func (r *Runner) poll(ctx context.Context) error {
	in, ok := r.cfg.Store.(session.Inbox)
	if !ok || r.cfg.SessionID == "" {
		return nil
	}
	posts, err := in.Posted(ctx, r.cfg.SessionID, r.conv.fetched)
	if err != nil {
		return fmt.Errorf("read the messages posted to session %q: %w", r.cfg.SessionID, err)
	}
	if len(posts) == 0 {
		return nil
	}
	r.conv.mu.Lock()
	for _, p := range posts {
		r.conv.inbox = append(r.conv.inbox, p.Message)
	}
	r.conv.fetched = posts[len(posts)-1].Seq
	r.conv.mu.Unlock()
	return nil
}

// pollOnce polls before a step, unless waitingMessages just did.
func (r *Runner) pollOnce(ctx context.Context) error {
	if r.conv.polled {
		err := r.conv.pollErr
		r.conv.polled, r.conv.pollErr = false, nil
		return err
	}
	return r.poll(ctx)
}

// waitingMessages reports whether messages wait to join a finished run:
// sent in process, or posted through the store. When it reads the store
// and finds posts (or fails), the next step's takeMessages uses what it
// read instead of reading again.
func (r *Runner) waitingMessages(ctx context.Context) bool {
	if r.hasSent() {
		return true
	}
	if r.err != nil {
		return false
	}
	if err := r.poll(ctx); err != nil {
		r.conv.polled, r.conv.pollErr = true, err
		return true // Next reports it
	}
	r.conv.polled = r.hasSent()
	return r.conv.polled
}
