package builtin_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects/builtin"
)

// golden compares got with testdata/<test name>.golden. With
// REPROMPT_UPDATE set (and CI not set) it writes the file instead.
func golden(t *testing.T, got string) {
	t.Helper()
	path := filepath.Join("testdata", strings.ReplaceAll(t.Name(), "/", "_")+".golden")
	if os.Getenv("REPROMPT_UPDATE") != "" && os.Getenv("CI") == "" {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (write it with REPROMPT_UPDATE=1 go test ./effects/builtin -run '^%s$')", err, t.Name())
	}
	if string(want) != got {
		t.Errorf("mismatch with %s (rewrite with REPROMPT_UPDATE=1):\n--- want\n%s\n--- got\n%s", path, want, got)
	}
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
	if got == nil || len(model.Calls()) != 1 {
		t.Fatal("no summary")
	}
	call := model.Calls()[0]
	golden(t, "-- system --\n"+call.system+"\n-- user --\n"+call.user+"\n-- summary message --\n"+got[1].Content+"\n")
}
