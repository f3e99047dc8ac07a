package runtime_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/snapshots"
)

type noteArgs struct {
	Text string `json:"text"`
}

// aliasPrompt changes state from tools and from an effect, runs effects
// with and without dependencies, and declares tools whose descriptions
// change with the state, so that every part of a step's record changes
// from step to step.
func aliasPrompt(p *prompt.Prompt) error {
	count, setCount := prompt.State(p, "count", 0)
	notes, setNotes := prompt.State(p, "notes", []string(nil))
	p.DefSystem("role", "You count.")
	p.Def("count", string(rune('a'+count%26)))
	prompt.DefTool(p, "inc", "Add one.", func(ctx context.Context, _ struct{}) (int, error) {
		setCount.Update(ctx, func(n int) int { return n + 1 })
		return count + 1, nil
	})
	prompt.DefTool(p, "note", "Keep a note ("+string(rune('a'+len(notes)%26))+").", func(ctx context.Context, a noteArgs) (string, error) {
		setNotes.Update(ctx, func(ns []string) []string { return append(ns[:len(ns):len(ns)], a.Text) })
		return "noted " + prompt.CallID(ctx), nil
	}, prompt.Idempotent())
	p.Effect(effects.Always, func(ctx context.Context, s *effects.Step) error { return nil })
	p.Effect(effects.On(count), func(ctx context.Context, s *effects.Step) error { return nil })
	p.Effect(effects.On(len(notes)), func(ctx context.Context, s *effects.Step) error { return nil }, effects.InPhase(effects.AfterReply))
	p.User("Count.")
	return nil
}

// TestStepRecordsNotChangedLater checks that what a step hands out (its
// record: request, reply, tool results, effects, state) is not changed by
// the steps after it, however the runtime reuses its buffers: each record
// is encoded when it is yielded and again once the run is over.
func TestStepRecordsNotChangedLater(t *testing.T) {
	replies := []snapshots.Reply{
		{Calls: []snapshots.Call{{Name: "inc"}, {Name: "note", Args: noteArgs{"x"}}}},
		{Calls: []snapshots.Call{{Name: "inc"}}},
		{Calls: []snapshots.Call{{Name: "note", Args: noteArgs{"y"}}, {Name: "inc"}, {Name: "note", Args: noteArgs{"z"}}}},
		{Calls: []snapshots.Call{{Name: "missing"}}},
		{Calls: []snapshots.Call{{Name: "inc"}}},
		{Text: "done"},
	}
	store := session.NewMemory()
	r := runtime.New(snapshots.Script(replies...), aliasPrompt, runtime.Config{Store: store, SessionID: "alias"})
	defer r.Close()
	var steps []*runtime.Step
	var atYield []string
	for s, err := range r.All(context.Background()) {
		require.NoError(t, err)
		steps = append(steps, s)
		atYield = append(atYield, encodeStep(t, s))
		require.NotEmpty(t, s.Effects, "step %d: the always effect runs", s.Number)
		for _, e := range s.Effects {
			require.True(t, e.ID != "" && e.Site != "" && e.Reason.Kind != 0, "step %d: effect record %+v", s.Number, e)
		}
		require.Len(t, s.ToolResults, len(s.Reply.Message.ToolCalls))
		for i, tr := range s.ToolResults {
			require.Equal(t, s.Reply.Message.ToolCalls[i].ID, tr.CallID)
		}
	}
	require.Len(t, steps, len(replies))
	for i, s := range steps {
		assert.Empty(t, cmp.Diff(atYield[i], encodeStep(t, s)), "step %d's record changed after it was yielded (-then +now)", i)
	}
}

func encodeStep(t *testing.T, s *runtime.Step) string {
	t.Helper()
	b, err := json.MarshalIndent(s, "", " ")
	require.NoError(t, err)
	return string(b)
}
