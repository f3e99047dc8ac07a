package effects_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
)

// CommitAppend adds messages to the transcript for good, after what it
// holds, without changing the slice it was given, and keeps views
// appended before it at the tail.
func TestCommitAppend(t *testing.T) {
	base := []defs.Message{defs.UserMessage("a"), defs.AssistantMessage("b")}
	s := effects.NewStep(1, base[:2:2])
	s.AppendMessages(defs.UserMessage("view"))
	s.CommitAppend(defs.UserMessage("c"))
	s.CommitAppend() // nothing to add: no commit of its own

	mods := s.Mods()
	assert.True(t, mods.Committed)
	want := []defs.Message{defs.UserMessage("a"), defs.AssistantMessage("b"), defs.UserMessage("c")}
	assert.Empty(t, cmp.Diff(want, mods.Transcript), "transcript mismatch (-want +got)")
	assert.Empty(t, cmp.Diff(append(want, defs.UserMessage("view")), s.Messages()), "messages mismatch (-want +got)")
	assert.Len(t, base, 2)
	assert.Equal(t, "b", base[1].Content)

	untouched := effects.NewStep(0, base)
	untouched.CommitAppend()
	assert.False(t, untouched.Mods().Committed)
}
