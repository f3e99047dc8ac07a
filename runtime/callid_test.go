package runtime_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/snapshots"
)

// sloppyModel reuses "call_0" on every turn, repeats it within a reply and
// sends calls without ids, as some OpenAI-compatible servers do. Its replies
// share one slice of calls, to check that the runtime does not change them.
type sloppyModel struct{ calls []defs.ToolCall }

func (m *sloppyModel) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	turns := 0
	for _, msg := range req.Messages {
		if msg.Role == defs.RoleAssistant {
			turns++
		}
	}
	if turns == 3 {
		return &llm.Reply{Message: defs.AssistantMessage("done")}, nil
	}
	return &llm.Reply{Message: defs.Message{Role: defs.RoleAssistant, ToolCalls: m.calls}}, nil
}

func callCounting(p *prompt.Prompt) error {
	_, set := prompt.State(p, "n", 0)
	prompt.DefTool(p, "inc", "Add one.", func(ctx context.Context, _ struct{}) (string, error) {
		set.Update(ctx, func(n int) int { return n + 1 })
		return prompt.CallID(ctx), nil
	})
	p.User("count")
	return nil
}

func TestCallIDsMadeUnique(t *testing.T) {
	ctx := context.Background()
	args := json.RawMessage(`{}`)
	model := &sloppyModel{calls: []defs.ToolCall{
		{ID: "call_0", Name: "inc", Arguments: args},
		{ID: "call_0", Name: "inc", Arguments: args},
		{Name: "inc", Arguments: args},
	}}
	store := &recordingStore{Store: session.NewMemory()}
	cfg := runtime.Config{Store: store, SessionID: "ids"}
	res, err := runtime.Run(ctx, model, callCounting, cfg)
	require.NoError(t, err, "a reply with repeated or missing ids must not fail the next step")
	require.NoError(t, runtime.ValidateMessages(res.Transcript))

	var ids []string
	for _, s := range res.Steps[:3] {
		for _, r := range s.ToolResults {
			assert.Equal(t, r.CallID, r.Content, "the tool sees the id the transcript holds")
			ids = append(ids, r.CallID)
		}
	}
	assert.Equal(t, []string{
		"call_0", "call_0_2", "call_0_2_2",
		"call_0_3", "call_0_4", "call_1_2",
		"call_0_5", "call_0_6", "call_2_2",
	}, ids)
	assert.Equal(t, "call_0", model.calls[0].ID, "the model's own calls are not changed")
	assert.Empty(t, model.calls[2].ID)

	// Every checkpoint can be resumed, and the resumed run completes.
	require.NotEmpty(t, store.saved)
	for _, cp := range store.saved {
		r, err := runtime.Resume(ctx, model, callCounting, runtime.Config{Store: latestStore{cp: &cp}, SessionID: "ids"})
		require.NoError(t, err, "resume at checkpoint %d", cp.Seq)
		if !cp.Done {
			_, err = r.Run(ctx)
			require.NoError(t, err, "run resumed at checkpoint %d", cp.Seq)
		}
	}
}

// latestStore serves one checkpoint and accepts the saves that follow it.
type latestStore struct {
	session.Store
	cp *session.Checkpoint
}

func (s latestStore) Latest(ctx context.Context, id string) (*session.Checkpoint, error) {
	return s.cp, nil
}

func (s latestStore) Save(ctx context.Context, cp *session.Checkpoint) error { return nil }

// TestCallIDsUniqueAcrossCommits checks the ids an effect's commit at step
// 1 changes, after the runner has seen the run's first calls: an id the
// commit brings in and an id it takes out (as a compaction does) are both
// used, and a reply at step 1 reusing one gets a suffix, as it would for
// an id of the model's own, instead of failing the next step's validation.
func TestCallIDsUniqueAcrossCommits(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reused string // the id of the reply at step 1
		commit func(s *effects.Step)
	}{{
		name:   "brought in",
		reused: "seed",
		commit: func(s *effects.Step) {
			s.CommitAppend(
				defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: "seed", Name: "inc", Arguments: json.RawMessage(`{}`)}}},
				defs.Message{Role: defs.RoleTool, ToolCallID: "seed", Name: "inc", Content: "seeded"},
			)
		},
	}, {
		name:   "taken out",
		reused: "a",
		commit: func(s *effects.Step) { s.CommitMessages([]defs.Message{defs.UserMessage("count, again")}) },
	}} {
		t.Run(tc.name, func(t *testing.T) {
			model := snapshots.Script(
				snapshots.Reply{Calls: []snapshots.Call{{ID: "a", Name: "inc"}}},
				snapshots.Reply{Calls: []snapshots.Call{{ID: tc.reused, Name: "inc"}}},
				snapshots.Reply{Text: "done"},
			)
			fn := func(p *prompt.Prompt) error {
				if err := callCounting(p); err != nil {
					return err
				}
				p.Effect(effects.Always, func(ctx context.Context, s *effects.Step) error {
					if s.Number == 1 {
						tc.commit(s)
					}
					return nil
				})
				return nil
			}
			res, err := runtime.Run(t.Context(), model, fn, runtime.Config{})
			require.NoError(t, err)
			require.NoError(t, runtime.ValidateMessages(res.Transcript))
			require.Len(t, res.Steps, 3)
			require.Len(t, res.Steps[1].ToolResults, 1)
			assert.Equal(t, tc.reused+"_2", res.Steps[1].ToolResults[0].CallID)
		})
	}
}
