package session_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

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
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*fixture{}
	for _, p := range paths {
		if strings.HasSuffix(p, ".want.json") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var f fixture
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out[p] = &f
	}
	if len(out) == 0 {
		t.Fatalf("no fixtures in testdata/%s", dir)
	}
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
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			if cp.Version != 1 {
				t.Errorf("Version = %d, want 1", cp.Version)
			}
			// Heads written before Base existed record no root: their
			// lineage is their own generation.
			if h, err := session.DecodeHead(f.head()); err != nil || h.Root != cp.Generation {
				t.Errorf("DecodeHead: root %v, %v; want the generation, %d", h, err, cp.Generation)
			}
			// Compared as values, so that a field added to Checkpoint
			// later (absent from old files, zero when loaded) does not
			// count as a difference.
			data, err := os.ReadFile(strings.TrimSuffix(path, ".json") + ".want.json")
			if err != nil {
				t.Fatal(err)
			}
			var want session.Checkpoint
			if err := json.Unmarshal(data, &want); err != nil {
				t.Fatal(err)
			}
			compact := cmp.Transformer("compact", func(r json.RawMessage) string {
				var b bytes.Buffer
				if err := json.Compact(&b, r); err != nil {
					return string(r)
				}
				if b.String() == "null" {
					return "" // how an absent value marshals
				}
				return b.String()
			})
			if diff := cmp.Diff(&want, cp, cmpopts.EquateEmpty(), compact); diff != "" {
				t.Errorf("loaded checkpoint differs from %s.want.json (-want +got):\n%s", strings.TrimSuffix(filepath.Base(path), ".json"), diff)
			}
		})
	}
}

func TestFutureVersionRefused(t *testing.T) {
	for path, f := range readFixtures(t, "future") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			cp, err := f.load()
			ve, ok := errors.AsType[*session.VersionError](err)
			if !ok {
				t.Fatalf("load = %v, %v; want a *session.VersionError", cp, err)
			}
			if ve.Max != session.Version || ve.Got <= session.Version || ve.ID != f.ID || ve.Seq != f.Seq {
				t.Fatalf("VersionError = %+v", ve)
			}
		})
	}
}

func TestCorruptFixtures(t *testing.T) {
	for path, f := range readFixtures(t, "corrupt") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			cp, err := f.load()
			ce, ok := errors.AsType[*session.CorruptError](err)
			if !ok || !errors.Is(err, session.ErrCorrupt) {
				t.Fatalf("load = %v, %v; want a *session.CorruptError", cp, err)
			}
			if ce.ID != f.ID || ce.Seq != f.Seq {
				t.Fatalf("CorruptError names %q seq %d, want %q seq %d", ce.ID, ce.Seq, f.ID, f.Seq)
			}
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
		if err != nil {
			t.Fatal(err)
		}
		var head map[string]any
		json.Unmarshal(w.Head, &head)
		if head["version"] != 1.0 {
			t.Fatalf("%s: head of version %v: the v1 fixtures are written as version 1", name, head["version"])
		}
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
		if err := os.WriteFile(p, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		loaded, err := f.load()
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.MarshalIndent(loaded, "", "\t")
		if err := os.WriteFile(filepath.Join("testdata", "v1", name+".want.json"), append(want, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
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
	if f == nil {
		t.Fatal("no testdata/v2/paused.json")
	}
	cp, err := f.load()
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if cp.Version != 2 || cp.FormatVersion() != 2 {
		t.Errorf("Version = %d, FormatVersion() = %d, want 2", cp.Version, cp.FormatVersion())
	}
	want := []session.Approval{{CallID: "c2", Decision: session.Approved, Started: true}, {CallID: "c3", Decision: session.Denied}}
	if diff := cmp.Diff(want, cp.Pending.Approvals); diff != "" {
		t.Errorf("approvals (-want +got):\n%s", diff)
	}
	if n := len(cp.Pending.Results); n != 2 || cp.Pending.Results[1].Content != "not today" {
		t.Errorf("results: %+v", cp.Pending.Results)
	}
	// Written again, it is version 2 again.
	w, err := session.Plan(cp, session.Tip{Seq: cp.Seq, Generation: cp.Generation, Root: cp.Generation, Messages: len(cp.Transcript)})
	if err != nil {
		t.Fatal(err)
	}
	h, err := session.DecodeHead(w.Head)
	if err != nil || h.Checkpoint.Version != 2 {
		t.Fatalf("head written again: %v, %v; want version 2", h, err)
	}
}
