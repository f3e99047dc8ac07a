package session_test

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/session"
	"github.com/stretchr/testify/require"
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
			if ve, ok := errors.AsType[*session.VersionError](err); ok {
				require.Greater(t, ve.Got, session.Version, "VersionError for version %d", ve.Got)
			}
			return
		}
		require.GreaterOrEqual(t, h.Checkpoint.Version, 1, "accepted an invalid head: %+v", h)
		require.LessOrEqual(t, h.Checkpoint.Version, session.Version, "accepted an invalid head: %+v", h)
		require.GreaterOrEqual(t, h.Messages, 0, "accepted an invalid head: %+v", h)
		require.NotEqual(t, "", h.Checkpoint.SessionID, "accepted an invalid head: %+v", h)
		if h.Messages > 1<<16 {
			// Re-encoding needs a transcript of that length; Load checks
			// such counts against the rows (see FuzzLoad).
			return
		}
		e1 := encode(t, h)
		h2, err := session.DecodeHead(e1)
		require.NoError(t, err, "re-decoding %s", e1)
		e2 := encode(t, h2)
		require.True(t, bytes.Equal(e1, e2), "unstable encoding:\n%s\n%s", e1, e2)
	})
}

func encode(t *testing.T, h *session.Head) []byte {
	cp := h.Checkpoint
	cp.Transcript = make([]defs.Message, h.Messages)
	b, err := session.EncodeHead(&cp)
	require.NoError(t, err, "EncodeHead of a decoded head")
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
		require.NoError(t, err, "EncodeMessage of a decoded message")
		m2, err := session.DecodeMessage(e1)
		require.NoError(t, err, "re-decoding %s", e1)
		e2, _ := session.EncodeMessage(m2)
		require.True(t, bytes.Equal(e1, e2), "unstable encoding:\n%s\n%s", e1, e2)
		require.False(t, !reflect.DeepEqual(m2.Meta, m.Meta) && len(m.Meta)+len(m2.Meta) > 0, "meta changed: %v → %v", m.Meta, m2.Meta)
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
			require.True(t, corrupt || version, "untyped error %T: %v", err, err)
			return
		}
		require.Len(t, cp.Transcript, h.Messages, "loaded %d messages, head names %d", len(cp.Transcript), h.Messages)
	})
}
