package session_test

import (
	"errors"
	"testing"

	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/session/sessiontest"
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
		gen       int
		wantFirst int
		wantN     int
	}{
		{"new session", session.Tip{}, 0, 0, 1002},
		{"two new messages", session.Tip{Seq: 7, Messages: 1000}, 0, 1000, 2},
		{"nothing new", session.Tip{Seq: 7, Messages: 1002}, 0, 1002, 0},
		{"new generation", session.Tip{Seq: 7, Messages: 1000}, 1, 0, 1002},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := *cp
			c.Seq, c.Generation = tt.tip.Seq, tt.gen
			w, err := session.Plan(&c, tt.tip)
			if err != nil {
				t.Fatal(err)
			}
			if w.First != tt.wantFirst || len(w.Messages) != tt.wantN {
				t.Fatalf("First %d, %d messages; want %d, %d", w.First, len(w.Messages), tt.wantFirst, tt.wantN)
			}
			if w.Tip != (session.Tip{Seq: tt.tip.Seq + 1, Generation: tt.gen, Messages: 1002}) {
				t.Fatalf("Tip = %+v", w.Tip)
			}
			if c.Seq != tt.tip.Seq {
				t.Fatal("Plan modified the checkpoint")
			}
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := *base
			c.Seq, c.Generation = 3, 2
			tt.edit(&c)
			_, err := session.Plan(&c, tip)
			if err == nil || !errors.As(err, tt.target) {
				t.Fatalf("Plan = %v, want %T", err, tt.target)
			}
		})
	}
}
