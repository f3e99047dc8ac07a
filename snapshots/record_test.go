package snapshots_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// TestRecordReplay records a run against a "real" model (here a scripted
// one), writes the recording, replays it, and checks that the replayed run
// is step for step the same.
func TestRecordReplay(t *testing.T) {
	ctx := context.Background()
	real := snapshots.Script(
		snapshots.Reply{Calls: []snapshots.Call{
			{ID: "toolu_01A", Name: "add", Args: addArgs{N: 1}},
			{ID: "toolu_01B", Name: "add", Args: `{"n": "two"}`}, // invalid, kept byte for byte
		}, Usage: &llm.Usage{InputTokens: 120, OutputTokens: 30, CachedTokens: 100}},
		snapshots.Reply{Reasoning: "Two more.", Calls: []snapshots.Call{{Name: "add", Args: addArgs{N: 2}}}},
		snapshots.Reply{Text: "The count is three.", Finish: llm.FinishLength},
	)
	rec := snapshots.Record(real)
	want, err := runtime.Run(ctx, rec, counter(role), runtime.Config{})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "recording.json")
	require.NoError(t, rec.WriteFile(path))

	replay, err := snapshots.Replay(path)
	require.NoError(t, err)
	got, err := runtime.Run(ctx, replay, counter(role), runtime.Config{})
	require.NoError(t, err)
	assert.Empty(t, cmp.Diff(string(snapshots.Format(want.Steps, nil)), string(snapshots.Format(got.Steps, nil))), "replayed run differs from the recorded one (-recorded +replayed)")
	assert.Empty(t, cmp.Diff(want.Usage, got.Usage), "usage mismatch (-recorded +replayed)")
	for i := range want.Steps {
		assert.Equal(t, want.Steps[i].Reply.FinishReason, got.Steps[i].Reply.FinishReason, "step %d: finish reason (recorded, replayed)", i)
	}
	assert.Zero(t, replay.Remaining(), "replies left unused")

	// In memory, without a file, the same.
	again, err := runtime.Run(ctx, snapshots.Script(rec.Replies()...), counter(role), runtime.Config{})
	require.NoError(t, err)
	assert.Empty(t, cmp.Diff(string(snapshots.Format(want.Steps, nil)), string(snapshots.Format(again.Steps, nil))), "Replies differ from the recorded run (-recorded +replayed)")
}

// TestRecordReplayErrors: a model error comes back as an *llm.ModelError
// with its status and flags, any other error with its text.
func TestRecordReplayErrors(t *testing.T) {
	ctx := context.Background()
	real := snapshots.Script(
		snapshots.Fail(&llm.ModelError{StatusCode: 429, Retryable: true, Message: "rate limited"}),
		snapshots.Fail(errors.New("connection reset")),
	)
	rec := snapshots.Record(real)
	req := &llm.Request{System: "s"}
	_, err1 := rec.Generate(ctx, req)
	_, err2 := rec.Generate(ctx, req)
	path := filepath.Join(t.TempDir(), "errors.json")
	require.NoError(t, rec.WriteFile(path))
	replay, err := snapshots.Replay(path)
	require.NoError(t, err)
	_, got1 := replay.Generate(ctx, req)
	_, got2 := replay.Generate(ctx, req)
	me, ok := errors.AsType[*llm.ModelError](got1)
	if assert.True(t, ok, "replayed model error = %#v, want an *llm.ModelError", got1) {
		assert.Equal(t, 429, me.StatusCode, "replayed model error = %#v, want status 429, retryable", got1)
		assert.True(t, me.Retryable, "replayed model error = %#v, want status 429, retryable", got1)
	}
	assert.True(t, llm.IsRetryable(got1), "replayed model error = %#v, want status 429, retryable", got1)
	// The recorded text is what a replay can give back.
	assert.Equal(t, err1.Error(), got1.Error(), "replayed %q, recorded %q", got1, err1)
	if assert.Error(t, got2, "replayed %v, recorded %v", got2, err2) {
		assert.Equal(t, err2.Error(), got2.Error(), "replayed %v, recorded %v", got2, err2)
	}
}

// TestReplayCommitted replays a recording committed under testdata and
// snapshots the run: the way a bug seen against a real model becomes a test.
func TestReplayCommitted(t *testing.T) {
	model, err := snapshots.Replay("testdata/counter.recording.json")
	require.NoError(t, err)
	snapshots.Run(t, counter(role), model)
}

func TestReplayBadFile(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"version.json": `{"version": 2, "replies": []}`,
		"field.json":   `{"version": 1, "replies": [{"txt": "typo"}]}`,
		"syntax.json":  `{"version": 1,`,
	} {
		path := filepath.Join(dir, name)
		os.WriteFile(path, []byte(content), 0o644)
		_, err := snapshots.Replay(path)
		assert.Error(t, err, "Replay(%s) succeeded", name)
	}
	_, err := snapshots.Replay(filepath.Join(dir, "missing.json"))
	assert.Error(t, err, "Replay of a missing file succeeded")
}

// TestRecordStream: the recorder streams through a streaming model and
// still records.
func TestRecordStream(t *testing.T) {
	rec := snapshots.Record(snapshots.Script(snapshots.Text("hello there")))
	var deltas []string
	cfg := runtime.Config{OnDelta: func(d llm.Delta) { deltas = append(deltas, d.Content) }}
	_, err := runtime.Run(context.Background(), rec, counter(role), cfg)
	require.NoError(t, err)
	assert.Empty(t, cmp.Diff([]string{"hello ", "there"}, deltas), "deltas mismatch (-want +got)")
	replies := rec.Replies()
	if assert.Len(t, replies, 1, "recorded %+v, want one reply with text %q", replies, "hello there") {
		assert.Equal(t, "hello there", replies[0].Text, "recorded %+v, want one reply with text %q", replies, "hello there")
	}
}

// delegatingAndSummarising delegates to the researcher and asks for a
// summary at step 1.
func delegatingAndSummarising(p *prompt.Prompt) error {
	if err := delegating(p); err != nil {
		return err
	}
	p.Effect(effects.Always, func(ctx context.Context, s *effects.Step) error {
		if s.Number == 1 {
			text, err := s.Model.Complete(ctx, "Summarise.", "so far")
			if err != nil {
				return err
			}
			s.AppendMessages(defs.UserMessage("summary: " + text))
		}
		return nil
	})
	return nil
}

// TestRecordReplayAgentsAndSummaries: a recording keeps which agent each
// reply answered and which replies were summaries, and the replay answers
// each agent from its own replies and summaries from theirs.
func TestRecordReplayAgentsAndSummaries(t *testing.T) {
	ctx := context.Background()
	real := snapshots.Script(
		snapshots.CallTool("researcher", prompt.AgentArgs{Task: "find the answer"}),
		snapshots.Summary("The researcher found 42."),
		snapshots.Text("The answer is 42."),
	).Agent("researcher", researcherScript()...)
	rec := snapshots.Record(real)
	want, err := runtime.Run(ctx, rec, delegatingAndSummarising, runtime.Config{})
	require.NoError(t, err)
	require.NoError(t, real.Err())
	path := filepath.Join(t.TempDir(), "recording.json")
	require.NoError(t, rec.WriteFile(path))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"agent": "researcher"`)
	assert.Contains(t, string(data), `"summary": true`)

	replay, err := snapshots.Replay(path)
	require.NoError(t, err)
	for name, m := range map[string]*snapshots.Model{"Replay": replay, "Recorder.Model": rec.Model()} {
		got, err := runtime.Run(ctx, m, delegatingAndSummarising, runtime.Config{})
		require.NoError(t, err, name)
		require.NoError(t, m.Err(), name)
		assert.Zero(t, m.Remaining(), name)
		assert.Empty(t, cmp.Diff(string(snapshots.Format(want.Steps, nil)), string(snapshots.Format(got.Steps, nil))), "%s: replayed run differs from the recorded one (-recorded +replayed)", name)
	}
	require.Len(t, want.Steps[1].Summaries, 1)
	require.Len(t, want.Steps[0].Agents, 1)
}

// TestReplayAgentsStrict: a replay with agent replies is strict about
// agents: a sub-agent the recording has no replies for fails, naming it.
func TestReplayAgentsStrict(t *testing.T) {
	path := filepath.Join(t.TempDir(), "recording.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"version": 1, "replies": [
		{"calls": [{"id": "c1", "name": "writer", "arguments": "{\"task\":\"w\"}"}]},
		{"agent": "researcher", "text": "unused"},
		{"text": "done"}
	]}`), 0o644))
	m, err := snapshots.Replay(path)
	require.NoError(t, err)
	_, err = runtime.Run(context.Background(), m, delegating, runtime.Config{})
	require.NoError(t, err)
	var se *snapshots.ScriptError
	require.ErrorAs(t, m.Err(), &se)
	assert.ErrorIs(t, se, snapshots.ErrNoAgentScript)
	assert.Equal(t, "writer", se.Agent)
}
