package sessiontest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/session"
)

// inboxTests are run for a store that implements session.Inbox.
var inboxTests = []struct {
	name string
	fn   func(t *testing.T, st session.Store, in session.Inbox)
}{
	{"InboxOrder", testInboxOrder},
	{"InboxUnknown", testInboxUnknown},
	{"InboxConcurrent", testInboxConcurrent},
}

// posted returns what in.Posted returns for id after after.
func posted(t *testing.T, in session.Inbox, id string, after int64) []session.Post {
	t.Helper()
	got, err := in.Posted(context.Background(), id, after)
	require.NoError(t, err, "Posted(%q, %d)", id, after)
	return got
}

func post(t *testing.T, in session.Inbox, id, text string) int64 {
	t.Helper()
	seq, err := in.Post(context.Background(), id, defs.UserMessage(text))
	require.NoError(t, err, "Post(%q, %q)", id, text)
	return seq
}

// testInboxOrder checks that posts are numbered from 1 in the order sent,
// per session, and that Posted gives back those after a cursor, as posted.
func testInboxOrder(t *testing.T, st session.Store, in session.Inbox) {
	ctx := context.Background()
	for _, id := range []string{"inbox-a", "inbox-b"} {
		cp := Fixture(id, 2)
		cp.Pending = nil
		save(t, st, cp)
	}
	texts := []string{"first", "«ünïcødé» \"quoted\"\n\t<tag>", "", "last"}
	var want []session.Post
	for i, text := range texts {
		assert.Equal(t, int64(i+1), post(t, in, "inbox-a", text), "Post %d: seq", i)
		want = append(want, session.Post{Seq: int64(i + 1), Message: defs.UserMessage(text)})
	}
	msg := defs.Message{Role: defs.RoleUser, Content: "with meta", Meta: map[string]string{"from": "cli"}}
	seq, err := in.Post(ctx, "inbox-a", msg)
	require.NoError(t, err, "Post with Meta")
	assert.Equal(t, int64(5), seq, "Post with Meta: seq")
	want = append(want, session.Post{Seq: 5, Message: msg})
	assert.Equal(t, int64(1), post(t, in, "inbox-b", "other session"), "first post of another session: seq")

	for _, after := range []int64{-1, 0, 1, 4, 5, 6, 1 << 40} {
		w := want[min(max(after, 0), int64(len(want))):]
		if len(w) == 0 {
			w = nil
		}
		got := posted(t, in, "inbox-a", after)
		if len(got) == 0 {
			got = nil
		}
		assert.Equal(t, w, got, "Posted after %d", after)
	}
	assert.Equal(t, []session.Post{{Seq: 1, Message: defs.UserMessage("other session")}}, posted(t, in, "inbox-b", 0),
		"Posted of another session")

	// Posting does not touch the checkpoints.
	info, err := st.Stat(ctx, "inbox-a")
	require.NoError(t, err, "Stat after posts")
	assert.Equal(t, int64(1), info.Seq, "Stat after posts: Seq")

	// Only user messages may be posted.
	for _, bad := range []defs.Message{
		{Role: defs.RoleAssistant, Content: "not the user"},
		{Role: defs.RoleTool, ToolCallID: "c", Content: "a result"},
		{Role: defs.RoleUser, ToolCallID: "c"},
		{Content: "no role"},
	} {
		_, err := in.Post(ctx, "inbox-a", bad)
		var inv *session.InvalidError
		assert.ErrorAs(t, err, &inv, "Post of %+v", bad)
	}
	assert.Len(t, posted(t, in, "inbox-a", 0), len(want), "Posted after refused posts")

	ctxDone, cancel := context.WithCancel(ctx)
	cancel()
	_, err = in.Post(ctxDone, "inbox-a", defs.UserMessage("canceled"))
	assert.Error(t, err, "Post with a canceled context")
	_, err = in.Posted(ctxDone, "inbox-a", 0)
	assert.Error(t, err, "Posted with a canceled context")
	assert.Len(t, posted(t, in, "inbox-a", 0), len(want), "Posted after a canceled Post")
}

// testInboxUnknown checks posts to sessions the store does not hold, and
// that Delete removes a session's posts.
func testInboxUnknown(t *testing.T, st session.Store, in session.Inbox) {
	ctx := context.Background()
	_, err := in.Post(ctx, "nope", defs.UserMessage("hello?"))
	isNotFound(t, err, "nope")
	assert.Empty(t, posted(t, in, "nope", 0), "Posted of an unknown session")

	cp := Fixture("gone", 2)
	save(t, st, cp)
	post(t, in, "gone", "one")
	post(t, in, "gone", "two")
	require.NoError(t, st.Delete(ctx, "gone"), "Delete")
	assert.Empty(t, posted(t, in, "gone", 0), "Posted after Delete")
	_, err = in.Post(ctx, "gone", defs.UserMessage("after delete"))
	isNotFound(t, err, "gone")

	// A deleted id saved again starts its posts over.
	cp = Fixture("gone", 2)
	save(t, st, cp)
	assert.Equal(t, int64(1), post(t, in, "gone", "again"), "first post after Delete and Save: seq")
	assert.Equal(t, []session.Post{{Seq: 1, Message: defs.UserMessage("again")}}, posted(t, in, "gone", 0),
		"Posted after Delete and Save")
}

// testInboxConcurrent posts from many goroutines while the session's
// checkpoints are saved and a reader follows a cursor: every post gets a
// distinct number, a poster's posts keep their order, and the reader,
// which asks only for posts above the last one it saw, sees every post
// exactly once, in order.
func testInboxConcurrent(t *testing.T, st session.Store, in session.Inbox) {
	const posters, each = 5, 12
	ctx := context.Background()
	cp := Fixture("busy", 1)
	cp.Pending = nil
	save(t, st, cp)

	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		seqs    = map[int64]string{}
		errs    = make(chan error, posters+2)
		running atomic.Int32
	)
	running.Store(posters)
	for p := range posters {
		wg.Go(func() {
			defer running.Add(-1)
			last := int64(0)
			for i := range each {
				text := fmt.Sprintf("poster %d message %d", p, i)
				seq, err := in.Post(ctx, "busy", defs.UserMessage(text))
				if err != nil {
					errs <- fmt.Errorf("%s: %w", text, err)
					return
				}
				if seq <= last {
					errs <- fmt.Errorf("%s: seq %d after %d", text, seq, last)
				}
				last = seq
				mu.Lock()
				seqs[seq] = text
				mu.Unlock()
			}
		})
	}
	wg.Go(func() { // saves go on while messages are posted
		for step := 1; running.Load() > 0; step++ {
			cp.Step = step
			cp.Transcript = append(cp.Transcript, Messages(len(cp.Transcript), 2)...)
			if err := st.Save(ctx, cp); err != nil {
				errs <- fmt.Errorf("save of step %d: %w", step, err)
				return
			}
		}
	})
	var seen []session.Post
	wg.Go(func() { // a reader follows its cursor
		cursor := int64(0)
		for {
			done := running.Load() == 0
			got, err := in.Posted(ctx, "busy", cursor)
			if err != nil {
				errs <- fmt.Errorf("posted after %d: %w", cursor, err)
				return
			}
			for _, p := range got {
				if p.Seq != cursor+1 {
					errs <- fmt.Errorf("posted after %d: seq %d, want %d (a post skipped or repeated)", cursor, p.Seq, cursor+1)
					return
				}
				cursor = p.Seq
			}
			seen = append(seen, got...)
			if done {
				return
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	if t.Failed() {
		return
	}
	require.Len(t, seqs, posters*each, "distinct seqs")
	all := posted(t, in, "busy", 0)
	require.Len(t, all, posters*each, "Posted after the posters")
	for i, p := range all {
		assert.Equal(t, int64(i+1), p.Seq, "Posted[%d].Seq", i)
		assert.Equal(t, seqs[p.Seq], p.Message.Content, "post %d", p.Seq)
	}
	assert.Equal(t, all, seen, "what the reader following its cursor saw")
}
