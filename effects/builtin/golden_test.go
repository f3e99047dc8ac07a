package builtin_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects/builtin"
	"github.com/reprompt/reprompt/snapshots"
)

// golden compares got with testdata/<test name>.golden (a subtest's "/"
// written "_") through snapshots.Golden: the update switch, CI rule and
// diff of every golden file of the module.
func golden(t testing.TB, got string) {
	t.Helper()
	path := filepath.Join("testdata", strings.ReplaceAll(t.Name(), "/", "_")+".golden")
	snapshots.Golden(t, path, []byte(got))
}

// TestSummariserInputGolden fixes the text the summariser receives for an
// update of a previous summary across a split turn, with parallel calls and
// an error result.
func TestSummariserInputGolden(t *testing.T) {
	model := &fakeModel{summary: "Second summary."}
	c := builtin.Compact(builtin.CompactConfig{Model: model, KeepRecentTokens: 20})
	prev := defs.Message{Role: defs.RoleUser, Content: builtin.SummaryContent("First summary.", []string{"a.go"}, nil),
		Meta: map[string]string{builtin.MetaSummary: "1", builtin.MetaSummaryText: "First summary.", builtin.MetaReadFiles: "a.go"}}
	msgs := []defs.Message{
		user("Task: fix the build."),
		prev,
		user("Now look at b.go and c.go."),
		call("Reading both.", "read_file:b", "read_file:c"),
		result("b", "read_file", "package b"),
		errResult("c", "read_file", "error: no such file c.go"),
		call("Editing b.", "edit_file:e"),
		result("e", "edit_file", "ok"),
		call("", "run:t"),
		result("t", "run", "PASS"),
	}
	s := newStep(4, msgs, 3000)
	s.ContextTooLong = true
	got := committed(t, c, s)
	require.NotNil(t, got, "no summary")
	require.Len(t, model.Calls(), 1, "no summary")
	call := model.Calls()[0]
	golden(t, "-- system --\n"+call.system+"\n-- user --\n"+call.user+"\n-- summary message --\n"+got[1].Content+"\n")
}

// TestGoldenUpdateSwitch: the helper above follows the module's update
// switch. REPROMPT_UPDATE=0 compares (it once rewrote these files, and not
// those of package snapshots); REPROMPT_UPDATE=1 rewrites.
func TestGoldenUpdateSwitch(t *testing.T) {
	tests := []struct {
		update  string
		rewrite bool
	}{
		{"0", false},
		{"", false},
		{"1", true},
	}
	for _, tt := range tests {
		t.Run("REPROMPT_UPDATE="+tt.update, func(t *testing.T) {
			t.Chdir(t.TempDir())
			const stale = "-- out --\nstale\n"
			path := filepath.Join("testdata", "TestOut.golden")
			require.NoError(t, os.Mkdir("testdata", 0o755))
			require.NoError(t, os.WriteFile(path, []byte(stale), 0o644))
			t.Setenv(snapshots.UpdateEnv, tt.update)
			t.Setenv(snapshots.CIEnv, "")
			f := &failures{TB: t, name: "TestOut"}
			golden(f, "-- out --\nnew\n")
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			rewritten := string(data) != stale
			assert.Equal(t, tt.rewrite, rewritten, "rewritten = %t, want %t", rewritten, tt.rewrite)
			failed := len(f.errors) > 0
			assert.Equal(t, !tt.rewrite, failed, "failed = %t, want %t: %q", failed, !tt.rewrite, f.errors)
		})
	}
}

// failures is a testing.TB named name that records Errorf instead of
// failing the test, and ignores Logf. Fatalf still fails the test.
type failures struct {
	testing.TB
	name   string
	errors []string
}

func (f *failures) Helper()             {}
func (f *failures) Name() string        { return f.name }
func (f *failures) Logf(string, ...any) {}
func (f *failures) Errorf(format string, args ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}
