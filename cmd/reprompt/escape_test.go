package main

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session/sqlite"
	"github.com/reprompt/reprompt/snapshots"
)

// TestShowEscapes stores what a hostile tool or model could return: escape
// and OSC sequences (clear the screen, set the title, write the
// clipboard), a carriage return, C1 and bidirectional controls, bytes that
// are not UTF-8, and text that the width cuts inside a character. show
// writes none of it raw, and every line is valid UTF-8.
func TestShowEscapes(t *testing.T) {
	hostile := "ok\x1b[2J\x1b]0;pwned\x07\x1b]52;c;SGVsbG8=\x07\rover\u009b31m\u202eevil\xff"
	path := filepath.Join(t.TempDir(), "hostile.db")
	st, err := sqlite.Open(path)
	require.NoError(t, err)
	tool := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "fetch", "Fetch.", func(ctx context.Context, _ struct{}) (string, error) { return hostile, nil })
		p.User("Fetch it.")
		return nil
	}
	model := snapshots.Script(snapshots.CallTool("fetch", nil), snapshots.Text("ééééé\x1b[31m red"))
	_, err = runtime.Run(t.Context(), model, tool, runtime.Config{Store: st, SessionID: "s\x1b[2J"})
	require.NoError(t, err)
	require.NoError(t, st.Close())
	store := "sqlite:" + path

	for _, args := range [][]string{
		{"--store", store, "show", "s\x1b[2J"},
		{"--store", store, "show", "s\x1b[2J", "--width", "3"},
		{"--store", store, "sessions"},
		{"--store", store, "show", "nope"}, // the error lists the session ids
	} {
		code, out, errs := cli(t, args...)
		for name, text := range map[string]string{"stdout": out, "stderr": errs} {
			assert.True(t, utf8.ValidString(text), "%q: %s is not UTF-8: %q", args, name, text)
			for _, r := range text {
				ok := r == '\n' || r >= ' ' && r != 0x7f && (r < 0x80 || r > 0x9f) && (r < 0x202a || r > 0x202e)
				assert.True(t, ok, "%q (status %d): %s holds %U: %q", args, code, name, r, text)
			}
		}
	}
	_, out, _ := cli(t, "--store", store, "show", "s\x1b[2J", "--width", "-1")
	assert.Contains(t, out, `→ ok\x1b[2J\x1b]0;pwned\x07\x1b]52;c;SGVsbG8=\x07\rover\u009b31m\u202eevil`+"\uFFFD", "the tool result, escaped (the store keeps UTF-8: \\xff became U+FFFD)")
	assert.Contains(t, out, `reply (stop): ééééé\x1b[31m red`)
	_, out, _ = cli(t, "--store", store, "show", "s\x1b[2J", "--width", "3")
	assert.Contains(t, out, "reply (stop): ééé…\n", "cut after three characters, not three bytes")
}

// TestToolErrorOnce: a tool's error is shown once, in its result, not
// again as the Go error it came from.
func TestToolErrorOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "err.db")
	st, err := sqlite.Open(path)
	require.NoError(t, err)
	fn := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "write", "Write.", func(ctx context.Context, _ struct{}) (string, error) {
			return "", errors.New("disk full on /var")
		})
		p.User("Write it.")
		return nil
	}
	_, err = runtime.Run(t.Context(), snapshots.Script(snapshots.CallTool("write", nil), snapshots.Text("Failed.")), fn, runtime.Config{Store: st, SessionID: "e"})
	require.NoError(t, err)
	require.NoError(t, st.Close())
	code, out, errs := cli(t, "--store", "sqlite:"+path, "show", "e")
	require.Equal(t, 0, code, errs)
	assert.Equal(t, 2, strings.Count(out, "disk full on /var"), "the error in the call's result and in the next request, once each:\n%s", out)
	assert.NotContains(t, out, "Go error:")
}
