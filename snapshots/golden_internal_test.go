package snapshots

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/runtime"
)

func TestGoldenPath(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"TestX", "testdata/TestX.txtar"},
		{"TestX/sub_case", "testdata/TestX/sub_case.txtar"},
		{"TestX/a:b*c?", "testdata/TestX/a_b_c_.txtar"},
		{"TestX/..", "testdata/TestX/___.txtar"},
		{"TestX/", "testdata/TestX/_.txtar"},
	} {
		got := filepath.ToSlash(goldenPath("testdata", tc.name))
		assert.Equal(t, tc.want, got, "goldenPath(%q) = %q, want %q", tc.name, got, tc.want)
	}
}

func TestUpdateCommand(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"TestX", `REPROMPT_UPDATE=1 go test ./snapshots -run '^TestX$'`},
		{"TestX/a_b", `REPROMPT_UPDATE=1 go test ./snapshots -run '^TestX$/^a_b$'`},
		{"TestX/1+1", `REPROMPT_UPDATE=1 go test ./snapshots -run '^TestX$/^1\+1$'`},
		{"TestX/it's", `REPROMPT_UPDATE=1 go test ./snapshots -run '^TestX$/^it'\''s$'`},
	} {
		got := updateCommand(tc.name)
		assert.Equal(t, tc.want, got, "updateCommand(%q) = %s, want %s", tc.name, got, tc.want)
	}
}

func TestEnvOn(t *testing.T) {
	for v, want := range map[string]bool{"": false, "0": false, "false": false, "FALSE": false, "1": true, "true": true, "yes": true} {
		t.Setenv("REPROMPT_TEST_ENV", v)
		got := envOn("REPROMPT_TEST_ENV")
		assert.Equal(t, want, got, "envOn(%q) = %t, want %t", v, got, want)
	}
}

func TestUnusedGoldens(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) string {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	usedFile := write("TestA.txtar", Header+"\n")
	unusedFile := write("TestB/sub.txtar", Header+"\n")
	oldVersion := write("TestC.txtar", "reprompt snapshot v0\n")
	write("other.txtar", "-- a txtar archive of something else --\n")
	write("TestD.json", Header+"\n")

	got := unusedGoldens([]string{dir, filepath.Join(dir, "missing")}, map[string]bool{usedFile: true})
	assert.Empty(t, cmp.Diff([]string{unusedFile, oldVersion}, got), "unused mismatch (-want +got)")
}

func TestDiffSections(t *testing.T) {
	want := Header + "\n-- step 0/system --\nA\n-- step 0/state --\nx: 1\n-- end --\nsteps: 1\n"
	got := Header + "\n-- step 0/system --\nB\n-- step 0/reply --\ncontent: hi\n-- end --\nsteps: 1\n"
	d := diffSections(want, got)
	for _, s := range []string{"-- step 0/system --\n", "-- step 0/reply -- (only in got)\n", "-- step 0/state -- (only in want)\n"} {
		assert.Contains(t, d, s, "diff lacks %q:\n%s", s, d)
	}
	assert.NotContains(t, d, "-- end --", "diff shows an equal section:\n%s", d)
}

// FuzzFormatSections: whatever text the system prompt, a message, a tool
// result or a state key holds, the golden text splits into exactly the
// sections Format wrote, and Format does not panic.
func FuzzFormatSections(f *testing.F) {
	f.Add("<role>\nYou help.\n</role>", "hi", "ok", "count")
	f.Add("-- step 0/reply --", "-- end --\n", "\n-- x --\n\n", "-- k --")
	f.Add("", "", "", "")
	f.Add("a\r\nb", "\n\n", "--  --", "a\nb")
	f.Fuzz(func(t *testing.T, system, user, result, key string) {
		step := &runtime.Step{
			Reply: &llm.Reply{Message: defs.Message{Role: defs.RoleAssistant, Content: result,
				ToolCalls: []defs.ToolCall{{ID: "c1", Name: "t", Arguments: json.RawMessage(user)}}}},
			ToolResults: []defs.ToolResult{{CallID: "c1", Name: "t", Content: result}},
			State:       map[string]any{key: result},
		}
		step.SetRequest(&llm.Request{
			System:   system,
			Messages: []defs.Message{defs.UserMessage(user)},
			Tools:    []llm.ToolSpec{{Name: "t", Description: user, Parameters: json.RawMessage(result)}},
		})
		out := string(Format([]*runtime.Step{step}, errors.New(user)))
		var names []string
		for _, s := range splitSections(out) {
			names = append(names, s.name)
		}
		want := []string{"", "step 0/system", "step 0/tools", "step 0/messages", "step 0/reply", "step 0/results", "step 0/state", "end"}
		assert.Empty(t, cmp.Diff(want, names), "sections of\n%s\nmismatch (-want +got)", out)
		assert.True(t, strings.HasPrefix(out, Header+"\n"), "bad framing:\n%s", out)
		assert.True(t, strings.HasSuffix(out, "\n"), "bad framing:\n%s", out)
	})
}
