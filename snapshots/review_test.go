package snapshots_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/snapshots"
)

func callIDs(t *testing.T, m *snapshots.Model, n int) []string {
	t.Helper()
	var ids []string
	for i := 0; i < n; i++ {
		r, err := m.Generate(context.Background(), &llm.Request{Purpose: llm.PurposeStep})
		require.NoError(t, err)
		for _, c := range r.Message.ToolCalls {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

// TestSkipNumbersCallsAsARun checks that Skip numbers the calls after the
// skipped replies as one process answering them all would, when a skipped
// call sets its own ID (Call.ID: call_n counts every call of the script).
func TestSkipNumbersCallsAsARun(t *testing.T) {
	script := func() *snapshots.Model {
		return snapshots.Script(
			snapshots.CallTools(snapshots.Call{ID: "mine", Name: "a"}),
			snapshots.CallTool("b", nil),
		)
	}
	whole := callIDs(t, script(), 2)
	require.Equal(t, []string{"mine", "call_2"}, whole)
	resumed := callIDs(t, script().Skip(1), 1)
	require.Equal(t, whole[1:], resumed, "the ids a resumed process gives")
}

// TestUpdatedGoldenWithCRLFMatches checks that a golden file written by
// an update is accepted by the next run when the request holds "\r\n"
// (a system prompt or a tool result read from a Windows file).
func TestUpdatedGoldenWithCRLFMatches(t *testing.T) {
	dir := t.TempDir()
	run := func(tb testing.TB) {
		snapshots.Run(tb, counter("You count.\r\nBe brief.\r\n"), counterScript(), snapshots.Dir(dir))
	}
	setEnv(t, "1", "")
	f := runFake(t, "TestCRLF", run)
	require.Empty(t, f.failed(), "the update")
	setEnv(t, "", "")
	f = runFake(t, "TestCRLF", run)
	require.Empty(t, f.failed(), "the run after the update")
}

// TestRecordingHoldsNoKey checks that WriteFile redacts the secrets of
// the model it recorded, as the runtime does in traces and logs: a
// recording is committed under testdata.
func TestRecordingHoldsNoKey(t *testing.T) {
	rec := snapshots.Record(keyModel{snapshots.Script(
		snapshots.Reply{Text: "key sk-1", Reasoning: "sk-1", Calls: []snapshots.Call{{Name: "t", Args: `{"k":"sk-1"}`}}},
		snapshots.Fail(errors.New("401: bad key sk-1")),
	)})
	for range 2 {
		_, _ = rec.Generate(context.Background(), &llm.Request{Purpose: llm.PurposeStep})
	}
	path := filepath.Join(t.TempDir(), "rec.json")
	require.NoError(t, rec.WriteFile(path))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NotContains(t, string(data), "sk-1")
	m, err := snapshots.Replay(path)
	require.NoError(t, err)
	r, err := m.Generate(context.Background(), &llm.Request{Purpose: llm.PurposeStep})
	require.NoError(t, err)
	require.Equal(t, `{"k":"[redacted]"}`, string(r.Message.ToolCalls[0].Arguments))
}

// TestReplayErrorNamesLine checks that a damaged recording's error names
// the file and the line at fault.
func TestReplayErrorNamesLine(t *testing.T) {
	for name, text := range map[string]string{
		"syntax":        "{\n  \"version\": 1,\n  \"replies\": [\n    {\"text\": \"a\",}\n  ]\n}\n",
		"unknown field": "{\n  \"version\": 1,\n  \"replies\": [\n    {\"txt\": \"a\"}\n  ]\n}\n",
		"type":          "{\n  \"version\": 1,\n  \"replies\": [\n    {\"text\": 1}\n  ]\n}\n",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "rec.json")
			require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
			_, err := snapshots.Replay(path)
			require.Error(t, err)
			require.Contains(t, err.Error(), path+":4")
		})
	}
}
