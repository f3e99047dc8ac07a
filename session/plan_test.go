package session_test

import (
	"bytes"
	"testing"

	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/session/sessiontest"
	"github.com/stretchr/testify/require"
)

// TestPlanWritesOnlyNewMessages checks the property that keeps a Save's
// cost independent of the history: only messages past the tip of the same
// generation are encoded.
func TestPlanWritesOnlyNewMessages(t *testing.T) {
	cp := sessiontest.Fixture("p", 1002)
	cp.Seq = 7
	tests := []struct {
		name      string
		tip       session.Tip
		gen, base int
		wantFirst int
		wantN     int
		wantRoot  int
		reason    string // why, where the case is not obvious
	}{
		{"new session", session.Tip{}, 0, 0, 0, 1002, 0, ""},
		{"two new messages", session.Tip{Seq: 7, Messages: 1000}, 0, 0, 1000, 2, 0, ""},
		{"nothing new", session.Tip{Seq: 7, Messages: 1002}, 0, 0, 1002, 0, 0, ""},
		{"new generation", session.Tip{Seq: 7, Messages: 1000}, 1, 0, 0, 1002, 1,
			"a new generation without a Base writes the whole transcript, whatever the tip holds, and is its own root"},
		{"new generation after a skipped one", session.Tip{Seq: 7, Generation: 3, Root: 2, Messages: 1000}, 5, 0, 0, 1002, 5,
			"a generation may skip numbers (3 to 5); without a Base it is its own root, not the tip's (2)"},
		{"new generation with a base", session.Tip{Seq: 7, Messages: 1000}, 1, 997, 997, 5, 0,
			"the rows below the Base are the tip's lineage's: only those from the Base on are written, under the tip's root"},
		{"base keeps the lineage's root", session.Tip{Seq: 7, Generation: 4, Root: 2, Messages: 1000}, 5, 1000, 1000, 2, 2,
			"the root is the lineage's first generation (the tip's root, 2), not the tip's generation (4)"},
		{"same generation keeps the root", session.Tip{Seq: 7, Generation: 4, Root: 2, Messages: 1000}, 4, 0, 1000, 2, 2, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.reason != "" {
				t.Cleanup(func() {
					if t.Failed() {
						t.Logf("why: %s", tt.reason)
					}
				})
			}
			c := *cp
			c.Seq, c.Generation, c.Base = tt.tip.Seq, tt.gen, tt.base
			w, err := session.Plan(&c, tt.tip)
			require.NoError(t, err)
			require.Equal(t, tt.wantFirst, w.First, "First %d, %d messages; want %d, %d", w.First, len(w.Messages), tt.wantFirst, tt.wantN)
			require.Len(t, w.Messages, tt.wantN, "First %d, %d messages; want %d, %d", w.First, len(w.Messages), tt.wantFirst, tt.wantN)
			if tt.tip.Seq == 0 {
				require.NotZero(t, w.Tip.Incarnation, "Tip.Incarnation of a new session")
				w.Tip.Incarnation = 0
			}
			require.Equal(t, (session.Tip{Seq: tt.tip.Seq + 1, Generation: tt.gen, Root: tt.wantRoot, Messages: 1002}), w.Tip, "Tip = %+v", w.Tip)
			h, err := session.DecodeHead(w.Head)
			require.NoError(t, err)
			require.Equal(t, tt.wantRoot, h.Root, "head: root %d, generation %d, base %d; want root %d, generation %d, base 0", h.Root, h.Checkpoint.Generation, h.Checkpoint.Base, tt.wantRoot, tt.gen)
			require.Equal(t, tt.gen, h.Checkpoint.Generation, "head: root %d, generation %d, base %d; want root %d, generation %d, base 0", h.Root, h.Checkpoint.Generation, h.Checkpoint.Base, tt.wantRoot, tt.gen)
			require.Zero(t, h.Checkpoint.Base, "head: root %d, generation %d, base %d; want root %d, generation %d, base 0", h.Root, h.Checkpoint.Generation, h.Checkpoint.Base, tt.wantRoot, tt.gen)
			// A head records a root only when it is not its generation, so
			// heads without shared rows are as version 1 wrote them.
			got := bytes.Contains(w.Head, []byte(`"root"`))
			require.Equal(t, (tt.wantRoot != tt.gen), got, "head %s: has root field %v", w.Head, got)
			require.Equal(t, c.Seq, tt.tip.Seq, "Plan modified the checkpoint")
		})
	}
}

func TestPlanRefuses(t *testing.T) {
	base := sessiontest.Fixture("p", 4)
	tip := session.Tip{Seq: 3, Generation: 2, Messages: 4}
	tests := []struct {
		name   string
		edit   func(*session.Checkpoint)
		target any
	}{
		{"stale seq", func(c *session.Checkpoint) { c.Seq = 2 }, new(*session.ConflictError)},
		{"empty id", func(c *session.Checkpoint) { c.SessionID = "" }, new(*session.InvalidError)},
		{"negative step", func(c *session.Checkpoint) { c.Step = -1 }, new(*session.InvalidError)},
		{"lower generation", func(c *session.Checkpoint) { c.Generation = 1 }, new(*session.InvalidError)},
		{"shorter transcript", func(c *session.Checkpoint) { c.Transcript = c.Transcript[:3] }, new(*session.InvalidError)},
		{"message without role", func(c *session.Checkpoint) {
			c.Transcript = append(c.Transcript[:4:4], c.Transcript[0])
			c.Transcript[4].Role = ""
		}, new(*session.InvalidError)},
		{"pending reply not from the assistant", func(c *session.Checkpoint) { c.Pending = &session.Pending{} }, new(*session.InvalidError)},
		{"negative base", func(c *session.Checkpoint) { c.Generation, c.Base = 3, -1 }, new(*session.InvalidError)},
		{"base in the same generation", func(c *session.Checkpoint) { c.Base = 2 }, new(*session.InvalidError)},
		{"base after a skipped generation", func(c *session.Checkpoint) { c.Generation, c.Base = 4, 2 }, new(*session.InvalidError)},
		{"base beyond the transcript", func(c *session.Checkpoint) {
			c.Generation, c.Base, c.Transcript = 3, 3, c.Transcript[:2]
		}, new(*session.InvalidError)},
		{"base beyond the latest transcript", func(c *session.Checkpoint) {
			c.Generation, c.Base = 3, 5
			c.Transcript = append(c.Transcript[:4:4], c.Transcript[0])
		}, new(*session.InvalidError)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := *base
			c.Seq, c.Generation = 3, 2
			tt.edit(&c)
			_, err := session.Plan(&c, tip)
			require.Error(t, err, "Plan = %v, want %T", err, tt.target)
			require.ErrorAs(t, err, tt.target, "Plan = %v, want %T", err, tt.target)
		})
	}
	// A base on the first checkpoint of a session.
	c := *base
	c.Seq, c.Base = 0, 1
	_, err := session.Plan(&c, session.Tip{})
	require.ErrorAs(t, err, new(*session.InvalidError), "Plan of a first checkpoint with a base = %v, want an *InvalidError", err)
	// The bounds themselves are accepted.
	c = *base
	c.Seq, c.Generation, c.Base = 3, 3, 4
	_, err = session.Plan(&c, tip)
	require.NoError(t, err, "Plan with base == both lengths")
}
