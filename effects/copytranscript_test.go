package effects_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
)

// A copy made by CopyTranscript and committed leaves the runtime room to
// append the step's messages (Mods.Room); any other committed slice is
// clipped, and the transcript the step was given is not changed.
func TestCopyTranscriptLeavesRoom(t *testing.T) {
	base := []defs.Message{defs.UserMessage("a"), defs.AssistantMessage("b"), defs.UserMessage("c")}
	s := effects.NewStep(1, base)
	out := s.CopyTranscript()
	require.Len(t, out, len(base), "CopyTranscript: length")
	assert.Greater(t, cap(out), len(base), "CopyTranscript: room after the copy")
	out[1] = defs.AssistantMessage("B")
	s.CommitMessages(out)

	mods := s.Mods()
	assert.True(t, mods.Room, "Room after committing the copy")
	assert.Equal(t, cap(out), cap(mods.Transcript), "the committed copy keeps its room")
	want := []defs.Message{defs.UserMessage("a"), defs.AssistantMessage("B"), defs.UserMessage("c")}
	assert.Empty(t, cmp.Diff(want, mods.Transcript), "transcript mismatch (-want +got)")
	assert.Equal(t, len(want), cap(s.Transcript()), "the transcript effects see is clipped")
	assert.Equal(t, "b", base[1].Content, "the step's transcript before the commit")

	// Another slice, or a second commit of the copy, is clipped.
	other := append(make([]defs.Message, 0, 10), base...)
	s.CommitMessages(other)
	assert.False(t, s.Mods().Room, "Room after committing a slice of the effect's own")
	assert.Equal(t, len(base), cap(s.Mods().Transcript), "a slice of the effect's own is clipped")
	s.CommitMessages(out)
	assert.False(t, s.Mods().Room, "Room after committing the copy again")
}
