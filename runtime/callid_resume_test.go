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
)

// reusingModel calls "inc" with the id "a" at each of its first five steps,
// as servers that number the calls of each reply do, and then answers.
type reusingModel struct{}

func (reusingModel) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	if req.Step >= 5 {
		return &llm.Reply{Message: defs.AssistantMessage("done")}, nil
	}
	return &llm.Reply{Message: defs.Message{Role: defs.RoleAssistant,
		ToolCalls: []defs.ToolCall{{ID: "a", Name: "inc", Arguments: json.RawMessage(`{}`)}}}}, nil
}

// compactingAt2 is callCounting with an effect that drops the whole
// conversation before the call of step 2, as a compaction does.
func compactingAt2(p *prompt.Prompt) error {
	if err := callCounting(p); err != nil {
		return err
	}
	p.Effect(effects.Always, func(ctx context.Context, s *effects.Step) error {
		if s.Number == 2 {
			s.CommitMessages([]defs.Message{defs.UserMessage("count, again")})
		}
		return nil
	})
	return nil
}

func callIDsOf(steps []*runtime.Step) []string {
	var ids []string
	for _, s := range steps {
		for _, r := range s.ToolResults {
			ids = append(ids, r.CallID)
		}
	}
	return ids
}

// TestCallIDsStayUniqueAcrossResume resumes a run after a compaction took
// earlier calls out of the transcript: a call id the model reuses must get
// the suffix it gets in an uninterrupted run, not the id of a call before
// the compaction (a tool that uses prompt.CallID as an idempotency key
// would take it for that call, and not do its work).
func TestCallIDsStayUniqueAcrossResume(t *testing.T) {
	ctx := context.Background()
	want, err := runtime.Run(ctx, reusingModel{}, compactingAt2, runtime.Config{})
	require.NoError(t, err)
	wantIDs := callIDsOf(want.Steps)
	require.Equal(t, []string{"a", "a_2", "a_3", "a_4", "a_5"}, wantIDs)

	for stop := 3; stop <= 5; stop++ {
		st := session.NewMemory()
		cfg := runtime.Config{Store: st, SessionID: "ids"}
		r := runtime.New(reusingModel{}, compactingAt2, cfg)
		var steps []*runtime.Step
		for range stop {
			s, err := r.Next(ctx)
			require.NoError(t, err)
			steps = append(steps, s)
		}
		// The process stops here; another resumes the session.
		r, err = runtime.Resume(ctx, reusingModel{}, compactingAt2, cfg)
		require.NoError(t, err)
		res, err := r.Run(ctx)
		require.NoError(t, err)
		got := callIDsOf(append(steps, res.Steps...))
		assert.Equal(t, wantIDs, got, "call ids of a run resumed after step %d", stop-1)
	}
}

// TestResumeDamagedRetiredCallIDs: retired call ids that are not a list of
// strings make the checkpoint corrupt.
func TestResumeDamagedRetiredCallIDs(t *testing.T) {
	cp := &session.Checkpoint{SessionID: "ids", Seq: 1, Step: 1,
		Extra: map[string]json.RawMessage{runtime.RetiredCallIDsKey: json.RawMessage(`{"a":1}`)}}
	_, err := runtime.Resume(context.Background(), reusingModel{}, compactingAt2, runtime.Config{Store: latestStore{cp: cp}, SessionID: "ids"})
	var ce *session.CorruptError
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, err.Error(), runtime.RetiredCallIDsKey)
}

// TestResumeLegacyRetiredCallIDs resumes from a checkpoint saved before
// Checkpoint.RetiredCallIDs existed, with the retired ids in Extra: the
// run goes on as an uninterrupted one, and its next checkpoints keep the
// ids in RetiredCallIDs, not in Extra.
func TestResumeLegacyRetiredCallIDs(t *testing.T) {
	ctx := context.Background()
	want, err := runtime.Run(ctx, reusingModel{}, compactingAt2, runtime.Config{})
	require.NoError(t, err)

	st := session.NewMemory()
	r := runtime.New(reusingModel{}, compactingAt2, runtime.Config{Store: st, SessionID: "ids"})
	var steps []*runtime.Step
	for range 4 {
		s, err := r.Next(ctx)
		require.NoError(t, err)
		steps = append(steps, s)
	}
	cp, err := st.Latest(ctx, "ids")
	require.NoError(t, err)
	require.NotEmpty(t, cp.RetiredCallIDs, "the compaction retired call ids")
	// The checkpoint as the earlier runtime saved it, in a store of its own.
	ids, err := json.Marshal(cp.RetiredCallIDs)
	require.NoError(t, err)
	cp.Extra = map[string]json.RawMessage{runtime.RetiredCallIDsKey: ids}
	cp.RetiredCallIDs, cp.Seq, cp.Version = nil, 0, 0
	legacy := session.NewMemory()
	require.NoError(t, legacy.Save(ctx, cp))

	r, err = runtime.Resume(ctx, reusingModel{}, compactingAt2, runtime.Config{Store: legacy, SessionID: "ids"})
	require.NoError(t, err)
	res, err := r.Run(ctx)
	require.NoError(t, err)
	assert.Equal(t, callIDsOf(want.Steps), callIDsOf(append(steps, res.Steps...)), "call ids of a run resumed from a legacy checkpoint")
	latest, err := legacy.Latest(ctx, "ids")
	require.NoError(t, err)
	var wantIDs []string
	require.NoError(t, json.Unmarshal(ids, &wantIDs))
	assert.Equal(t, wantIDs, latest.RetiredCallIDs, "RetiredCallIDs of the checkpoint after the legacy one")
	assert.NotContains(t, latest.Extra, runtime.RetiredCallIDsKey, "Extra of the checkpoint after the legacy one")
}
