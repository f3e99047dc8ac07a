package snapshots_test

import (
	"cmp"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/snapshots"
)

// TestUpdateSwitch: Run and Golden follow one update switch. Only a value
// of UpdateEnv other than "", "0", "false", "no" and "off" rewrites a golden
// file that does not match; REPROMPT_UPDATE=0 compares, as in every other
// package of the module.
func TestUpdateSwitch(t *testing.T) {
	tests := []struct {
		update  string
		rewrite bool
		reason  string
	}{
		{"", false, "the variable unset compares"},
		{"0", false, "0 reads as off: it once updated effects/builtin's golden files"},
		{"false", false, "false reads as off"},
		{"off", false, "off reads as off"},
		{"1", true, "1 updates"},
		{"yes", true, "any other value updates"},
	}
	// Each way of comparing writes a file that does not match its output,
	// then compares under the variable.
	ways := []struct {
		name    string
		compare func(tb testing.TB, dir string)
		path    string // relative to dir
	}{
		{"Run", func(tb testing.TB, dir string) {
			snapshots.Run(tb, counter(role), counterScript(), snapshots.Dir(dir))
		}, "TestAgent.txtar"},
		{"Golden", func(tb testing.TB, dir string) {
			snapshots.Golden(tb, filepath.Join(dir, "out.golden"), []byte("-- a --\nnew\n"))
		}, "out.golden"},
	}
	for _, way := range ways {
		for _, tt := range tests {
			t.Run(way.name+"/"+cmp.Or(tt.update, "unset"), func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, way.path)
				const stale = "stale golden file\n"
				require.NoError(t, os.WriteFile(path, []byte(stale), 0o644))
				setEnv(t, tt.update, "")
				f := runFake(t, "TestAgent", func(tb testing.TB) { way.compare(tb, dir) })
				data, err := os.ReadFile(path)
				require.NoError(t, err)
				rewritten := string(data) != stale
				assert.Equal(t, tt.rewrite, rewritten, "%s=%q: rewritten = %t, want %t (%s)", snapshots.UpdateEnv, tt.update, rewritten, tt.rewrite, tt.reason)
				failed := f.failed() != ""
				assert.Equal(t, !tt.rewrite, failed, "%s=%q: failed = %t, want %t (%s); failure: %s", snapshots.UpdateEnv, tt.update, failed, !tt.rewrite, tt.reason, f.failed())
			})
		}
	}
}

// TestGoldenMismatch: a mismatch fails with the file's path, a diff of the
// sections that differ (of the lines when there are none) and the command
// that rewrites the file, and leaves the file alone.
func TestGoldenMismatch(t *testing.T) {
	tests := []struct {
		name, want, got string
		diff            []string // lines the failure shows
		unwanted        []string // lines it must not show
		reason          string
	}{
		{"sections", "-- a --\nsame\n-- b --\nold\n", "-- a --\nsame\n-- b --\nnew\n",
			[]string{"-- b --", `- 	"old",`, `+ 	"new",`}, []string{"-- a --"},
			"only the section that changed is shown"},
		{"plain text", "one\ntwo\n", "one\nthree\n",
			[]string{`- 	"two",`, `+ 	"three",`}, []string{"-- header --"},
			"text without sections is diffed line by line, not as a section named header"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out.golden")
			require.NoError(t, os.WriteFile(path, []byte(tt.want), 0o644))
			setEnv(t, "", "")
			f := runFake(t, "TestOut/case", func(tb testing.TB) { snapshots.Golden(tb, path, []byte(tt.got)) })
			require.Len(t, f.errors, 1, "got errors %q, fatals %q; want one error", f.errors, f.fatals)
			require.Empty(t, f.fatals, "got errors %q, fatals %q; want one error", f.errors, f.fatals)
			// go-cmp writes some spaces of a diff as U+00A0; read them as
			// plain spaces.
			msg := strings.ReplaceAll(f.errors[0], "\u00a0", " ")
			for _, s := range append([]string{
				path + " does not match the test's output (-want +got)",
				"REPROMPT_UPDATE=1 go test ./snapshots -run '^TestOut$/^case$'",
			}, tt.diff...) {
				assert.Contains(t, msg, s, "the failure does not contain %q (%s):\n%s", s, tt.reason, msg)
			}
			for _, s := range tt.unwanted {
				assert.NotContains(t, msg, s, "the failure contains %q (%s):\n%s", s, tt.reason, msg)
			}
			data, _ := os.ReadFile(path)
			assert.Equal(t, tt.want, string(data), "the golden file changed without %s", snapshots.UpdateEnv)
		})
	}
}

// TestGoldenMissingAndCI: a missing file is created only when updating off
// CI, updating on CI fails without writing, and "\r\n" in a file reads as
// "\n".
func TestGoldenMissingAndCI(t *testing.T) {
	tests := []struct {
		name, update, ci string
		file             string // the golden file before; "" for none
		fail             string // substring of the failure; "" for none
		wantFile         string // the golden file after; "" for none
	}{
		{"missing", "", "", "", "REPROMPT_UPDATE=1 go test ./snapshots -run '^TestOut$'", ""},
		{"missing on CI", "", "1", "", "it is not created on CI", ""},
		{"created", "1", "", "", "", "got\n"},
		{"not created on CI", "1", "1", "", "never written on CI", ""},
		{"not updated on CI", "1", "1", "old\n", "never written on CI", "old\n"},
		{"CRLF file matches", "", "", "got\r\n", "", "got\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sub", "out.golden")
			if tt.file != "" {
				require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
				require.NoError(t, os.WriteFile(path, []byte(tt.file), 0o644))
			}
			setEnv(t, tt.update, tt.ci)
			f := runFake(t, "TestOut", func(tb testing.TB) { snapshots.Golden(tb, path, []byte("got\n")) })
			msg := f.failed()
			if tt.fail == "" {
				assert.Empty(t, msg, "unexpected failure")
			} else {
				assert.Contains(t, msg, tt.fail, "the failure does not say what failed")
			}
			data, err := os.ReadFile(path)
			if tt.wantFile == "" {
				assert.Error(t, err, "file written: %q", data)
			} else {
				assert.Equal(t, tt.wantFile, string(data), "file = %q, %v; want %q", data, err, tt.wantFile)
			}
		})
	}
}
