package session_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/session/sessiontest"
)

// A fixture file holds one stored checkpoint as a store keeps it: the head
// and the rows of its generation. Stored bytes that are JSON are kept as
// JSON (Head, Data), others as strings (HeadText, Text).
type fixture struct {
	ID       string          `json:"id"`
	Seq      int64           `json:"seq"`
	Head     json.RawMessage `json:"head,omitempty"`
	HeadText *string         `json:"head_text,omitempty"`
	Rows     []fixtureRow    `json:"rows"`
}

type fixtureRow struct {
	Index int             `json:"index"`
	Data  json.RawMessage `json:"data,omitempty"`
	Text  *string         `json:"text,omitempty"`
}

func (f *fixture) head() []byte {
	if f.HeadText != nil {
		return []byte(*f.HeadText)
	}
	return f.Head
}

func (f *fixture) load() (*session.Checkpoint, error) {
	return session.Load(f.ID, f.Seq, f.head(), func(root, gen, n int) ([]session.Row, error) {
		var rows []session.Row
		for _, r := range f.Rows {
			if r.Index >= n {
				continue
			}
			data := []byte(r.Data)
			if r.Text != nil {
				data = []byte(*r.Text)
			}
			rows = append(rows, session.Row{Index: r.Index, Data: data})
		}
		return rows, nil
	})
}

func readFixtures(t testing.TB, dir string) map[string]*fixture {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", dir, "*.json"))
	require.NoError(t, err)
	out := map[string]*fixture{}
	for _, p := range paths {
		if strings.HasSuffix(p, ".want.json") {
			continue
		}
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		var f fixture
		require.NoError(t, json.Unmarshal(b, &f), "%s", p)
		out[p] = &f
	}
	require.NotEmpty(t, out, "no fixtures in testdata/%s", dir)
	return out
}

// TestVersion1Fixtures loads checkpoints written by version 1 of the format
// and compares each with what it decoded to when it was written
// (NAME.want.json). These files are never rewritten by a later version: a
// failure here means old sessions would no longer resume.
func TestVersion1Fixtures(t *testing.T) {
	for path, f := range readFixtures(t, "v1") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			cp, err := f.load()
			require.NoError(t, err, "load")
			assert.Equal(t, 1, cp.Version, "Version = %d, want 1", cp.Version)
			// Heads written before Base existed record no root: their
			// lineage is their own generation.
			h, err := session.DecodeHead(f.head())
			assert.True(t, err == nil && h.Root == cp.Generation, "DecodeHead: root %v, %v; want the generation, %d", h, err, cp.Generation)
			// Compared as values, so that a field added to Checkpoint
			// later (absent from old files, zero when loaded) does not
			// count as a difference.
			data, err := os.ReadFile(strings.TrimSuffix(path, ".json") + ".want.json")
			require.NoError(t, err)
			var want session.Checkpoint
			require.NoError(t, json.Unmarshal(data, &want))
			// JSON values compare by content: keys sorted, no space.
			compact := cmp.Transformer("compact", func(r json.RawMessage) string {
				var v any
				if err := json.Unmarshal(r, &v); err != nil {
					return string(r)
				}
				if v == nil {
					return "" // how an absent value marshals
				}
				b, err := json.Marshal(v)
				if err != nil {
					return string(r)
				}
				return string(b)
			})
			assert.Empty(t, cmp.Diff(&want, cp, cmpopts.EquateEmpty(), compact), "loaded checkpoint differs from %s.want.json (-want +got)", strings.TrimSuffix(filepath.Base(path), ".json"))
		})
	}
}

func TestFutureVersionRefused(t *testing.T) {
	for path, f := range readFixtures(t, "future") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			cp, err := f.load()
			ve, ok := errors.AsType[*session.VersionError](err)
			require.True(t, ok, "load = %v, %v; want a *session.VersionError", cp, err)
			require.Equal(t, session.Version, ve.Max, "VersionError = %+v", ve)
			require.Greater(t, ve.Got, session.Version, "VersionError = %+v", ve)
			require.Equal(t, f.ID, ve.ID, "VersionError = %+v", ve)
			require.Equal(t, f.Seq, ve.Seq, "VersionError = %+v", ve)
		})
	}
}

func TestCorruptFixtures(t *testing.T) {
	for path, f := range readFixtures(t, "corrupt") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			cp, err := f.load()
			ce, ok := errors.AsType[*session.CorruptError](err)
			require.True(t, ok, "load = %v, %v; want a *session.CorruptError", cp, err)
			require.ErrorIs(t, err, session.ErrCorrupt, "load = %v, %v; want a *session.CorruptError", cp, err)
			require.Equal(t, f.ID, ce.ID, "CorruptError names %q seq %d, want %q seq %d", ce.ID, ce.Seq, f.ID, f.Seq)
			require.Equal(t, f.Seq, ce.Seq, "CorruptError names %q seq %d, want %q seq %d", ce.ID, ce.Seq, f.ID, f.Seq)
			t.Log(err)
		})
	}
}

// TestWriteVersion1Fixtures writes the version 1 fixtures. It runs only with
// REPROMPT_WRITE_FIXTURES=1, never in CI, from checkpoints written as
// version 1 (no approvals): the files record what version 1 wrote and must
// not change afterwards.
func TestWriteVersion1Fixtures(t *testing.T) {
	if os.Getenv("REPROMPT_WRITE_FIXTURES") != "1" || os.Getenv("CI") != "" {
		t.Skip("set REPROMPT_WRITE_FIXTURES=1 (outside CI) to write testdata/v1")
	}
	full := sessiontest.Fixture("full", 9)
	full.Seq = 4
	full.Pending.Approvals = nil // version 2
	minimal := &session.Checkpoint{SessionID: "minimal"}
	compacted := sessiontest.Fixture("compacted", 0)
	compacted.Pending = nil
	compacted.Generation, compacted.Step, compacted.Seq, compacted.Done = 2, 40, 41, true
	compacted.Transcript = []defs.Message{
		{Role: defs.RoleUser, Content: "[summary] read a.txt, wrote b.txt", Meta: map[string]string{"summary": "2"}},
		defs.AssistantMessage("All done."),
	}
	write := func(name string, cp *session.Checkpoint, edit func(head map[string]any, rows []map[string]any)) {
		seq := cp.Seq
		w, err := session.Plan(cp, session.Tip{Seq: seq, Generation: cp.Generation, Root: cp.Generation})
		require.NoError(t, err)
		var head map[string]any
		json.Unmarshal(w.Head, &head)
		require.Equal(t, 1.0, head["version"], "%s: head of version %v: the v1 fixtures are written as version 1", name, head["version"])
		rows := make([]map[string]any, len(w.Messages))
		for i, m := range w.Messages {
			json.Unmarshal(m, &rows[i])
		}
		if edit != nil {
			edit(head, rows)
		}
		f := fixture{ID: cp.SessionID, Seq: seq + 1}
		f.Head, _ = json.Marshal(head)
		for i, r := range rows {
			b, _ := json.Marshal(r)
			f.Rows = append(f.Rows, fixtureRow{Index: i, Data: b})
		}
		b, _ := json.MarshalIndent(f, "", "\t")
		p := filepath.Join("testdata", "v1", name+".json")
		require.NoError(t, os.WriteFile(p, append(b, '\n'), 0o644))
		loaded, err := f.load()
		require.NoError(t, err)
		want, _ := json.MarshalIndent(loaded, "", "\t")
		require.NoError(t, os.WriteFile(filepath.Join("testdata", "v1", name+".want.json"), append(want, '\n'), 0o644))
	}
	write("full", full, nil)
	write("minimal", minimal, nil)
	write("compacted", compacted, nil)
	unknown := sessiontest.Fixture("unknown-fields", 4)
	unknown.Pending.Approvals = nil
	write("unknown-fields", unknown, func(head map[string]any, rows []map[string]any) {
		head["written_by"] = "a later 1.x release"
		head["stats"].(map[string]any)["reasoning_tokens"] = 77
		for _, r := range rows {
			r["provider_id"] = "msg_123"
		}
	})
}

// TestVersion2Fixtures loads checkpoints written by version 2 of the format:
// a step paused for approvals. Like the v1 files, they are never rewritten.
func TestVersion2Fixtures(t *testing.T) {
	f := readFixtures(t, "v2")[filepath.Join("testdata", "v2", "paused.json")]
	require.NotNil(t, f, "no testdata/v2/paused.json")
	cp, err := f.load()
	require.NoError(t, err, "load")
	assert.True(t, cp.Version == 2 && cp.FormatVersion() == 2, "Version = %d, FormatVersion() = %d, want 2", cp.Version, cp.FormatVersion())
	want := []session.Approval{{CallID: "c2", Decision: session.Approved, Started: true}, {CallID: "c3", Decision: session.Denied}}
	assert.Empty(t, cmp.Diff(want, cp.Pending.Approvals), "approvals (-want +got)")
	n := len(cp.Pending.Results)
	assert.True(t, n == 2 && cp.Pending.Results[1].Content == "not today", "results: %+v", cp.Pending.Results)
	// Written again, it is version 2 again.
	w, err := session.Plan(cp, session.Tip{Seq: cp.Seq, Generation: cp.Generation, Root: cp.Generation, Messages: len(cp.Transcript)})
	require.NoError(t, err)
	h, err := session.DecodeHead(w.Head)
	require.NoError(t, err, "head written again: %v, %v; want version 2", h, err)
	require.Equal(t, 2, h.Checkpoint.Version, "head written again: %v, %v; want version 2", h, err)
}
