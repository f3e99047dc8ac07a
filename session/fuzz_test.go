package session_test

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/session"
)

// addFixtureSeeds adds the heads (or, with rows, the message rows) of every
// fixture to f's corpus.
func addFixtureSeeds(f *testing.F, rows bool) {
	for _, dir := range []string{"v1", "v2", "future", "corrupt"} {
		for _, fx := range readFixtures(f, dir) {
			if !rows {
				f.Add(fx.head())
				continue
			}
			for _, r := range fx.Rows {
				if r.Text != nil {
					f.Add([]byte(*r.Text))
				} else {
					f.Add([]byte(r.Data))
				}
			}
		}
	}
}

// FuzzDecodeHead checks that DecodeHead never panics, that it fails only
// with a *VersionError or a plain error, and that what it accepts encodes
// to a stable form: encode(decode(encode(decode(x)))) == encode(decode(x)).
func FuzzDecodeHead(f *testing.F) {
	addFixtureSeeds(f, false)
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := session.DecodeHead(data)
		if err != nil {
			if ve, ok := errors.AsType[*session.VersionError](err); ok && ve.Got <= session.Version {
				t.Fatalf("VersionError for version %d", ve.Got)
			}
			return
		}
		if h.Checkpoint.Version < 1 || h.Checkpoint.Version > session.Version || h.Messages < 0 || h.Checkpoint.SessionID == "" {
			t.Fatalf("accepted an invalid head: %+v", h)
		}
		if h.Messages > 1<<16 {
			// Re-encoding needs a transcript of that length; Load checks
			// such counts against the rows (see FuzzLoad).
			return
		}
		e1 := encode(t, h)
		h2, err := session.DecodeHead(e1)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", e1, err)
		}
		if e2 := encode(t, h2); !bytes.Equal(e1, e2) {
			t.Fatalf("unstable encoding:\n%s\n%s", e1, e2)
		}
	})
}

func encode(t *testing.T, h *session.Head) []byte {
	cp := h.Checkpoint
	cp.Transcript = make([]defs.Message, h.Messages)
	b, err := session.EncodeHead(&cp)
	if err != nil {
		t.Fatalf("EncodeHead of a decoded head: %v", err)
	}
	return b
}

// FuzzDecodeMessage checks that DecodeMessage never panics and that what it
// accepts encodes to a stable form.
func FuzzDecodeMessage(f *testing.F) {
	addFixtureSeeds(f, true)
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := session.DecodeMessage(data)
		if err != nil {
			return
		}
		e1, err := session.EncodeMessage(m)
		if err != nil {
			t.Fatalf("EncodeMessage of a decoded message: %v", err)
		}
		m2, err := session.DecodeMessage(e1)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", e1, err)
		}
		e2, _ := session.EncodeMessage(m2)
		if !bytes.Equal(e1, e2) {
			t.Fatalf("unstable encoding:\n%s\n%s", e1, e2)
		}
		if !reflect.DeepEqual(m2.Meta, m.Meta) && len(m.Meta)+len(m2.Meta) > 0 {
			t.Fatalf("meta changed: %v → %v", m.Meta, m2.Meta)
		}
	})
}

// FuzzLoad checks that Load never panics on any head and rows (rows are the
// fuzz bytes split at newlines), and fails only with typed errors.
func FuzzLoad(f *testing.F) {
	for _, dir := range []string{"v1", "corrupt"} {
		for _, fx := range readFixtures(f, dir) {
			var rows [][]byte
			for _, r := range fx.Rows {
				if r.Text != nil {
					rows = append(rows, []byte(*r.Text))
				} else {
					rows = append(rows, r.Data)
				}
			}
			f.Add(fx.head(), bytes.Join(rows, []byte("\n")))
		}
	}
	f.Fuzz(func(t *testing.T, head, rowData []byte) {
		h, err := session.DecodeHead(head)
		id, seq := "s", int64(1)
		if err == nil {
			id, seq = h.Checkpoint.SessionID, h.Checkpoint.Seq
		}
		var rows []session.Row
		for i, r := range bytes.Split(rowData, []byte("\n")) {
			rows = append(rows, session.Row{Index: i, Data: r})
		}
		cp, err := session.Load(id, seq, head, func(root, gen, n int) ([]session.Row, error) {
			return rows[:min(n, len(rows))], nil
		})
		if err != nil {
			_, corrupt := errors.AsType[*session.CorruptError](err)
			_, version := errors.AsType[*session.VersionError](err)
			if !corrupt && !version {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			return
		}
		if len(cp.Transcript) != h.Messages {
			t.Fatalf("loaded %d messages, head names %d", len(cp.Transcript), h.Messages)
		}
	})
}
