package snapshots_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

const role = "You count. Use the add tool."

// TestGolden is the round trip on a committed golden file:
// testdata/TestGolden.txtar.
func TestGolden(t *testing.T) {
	res := snapshots.Run(t, counter(role), counterScript())
	if got, want := res.Text, "The count is three."; got != want {
		t.Errorf("final text = %q, want %q", got, want)
	}
}

// TestGoldenSubtests keys golden files of subtests by their full name, one
// directory per level.
func TestGoldenSubtests(t *testing.T) {
	for _, tc := range []struct {
		name    string
		replies []snapshots.Reply
	}{
		{"direct answer", []snapshots.Reply{snapshots.Text("Nothing to count.")}},
		{"one call", []snapshots.Reply{snapshots.CallTool("add", addArgs{N: 3}), snapshots.Text("Three.")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snapshots.Run(t, counter(role), snapshots.Script(tc.replies...))
		})
	}
}

// TestGoldenError snapshots a run that ends with an error.
func TestGoldenError(t *testing.T) {
	loop := snapshots.Script(
		snapshots.CallTool("add", addArgs{N: 1}),
		snapshots.CallTool("add", addArgs{N: 1}),
	)
	snapshots.Run(t, counter(role), loop, snapshots.Config(runtime.Config{MaxSteps: 2}), snapshots.ExpectError())
}

// golden writes the golden file of a fake test named name in dir, by running
// the counter prompt with role in update mode, and returns its path.
func golden(t *testing.T, dir, name, role string) string {
	t.Helper()
	setEnv(t, "1", "")
	f := runFake(t, name, func(tb testing.TB) {
		snapshots.Run(tb, counter(role), counterScript(), snapshots.Dir(dir))
	})
	if msg := f.failed(); msg != "" {
		t.Fatalf("writing the golden file failed: %s", msg)
	}
	path := filepath.Join(dir, filepath.FromSlash(name)+".txtar")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("golden file not written: %v", err)
	}
	return path
}

func TestMismatchFailsWithDiff(t *testing.T) {
	dir := t.TempDir()
	path := golden(t, dir, "TestAgent/changed role", role)
	before, _ := os.ReadFile(path)

	setEnv(t, "", "")
	f := runFake(t, "TestAgent/changed role", func(tb testing.TB) {
		snapshots.Run(tb, counter("You count carefully."), counterScript(), snapshots.Dir(dir))
	})
	if len(f.errors) != 1 || len(f.fatals) != 0 {
		t.Fatalf("got errors %q, fatals %q; want one error", f.errors, f.fatals)
	}
	// go-cmp randomly writes some spaces of a diff as U+00A0, so that its
	// output is not parsed; read it with plain spaces.
	msg := strings.ReplaceAll(f.errors[0], "\u00a0", " ")
	for _, want := range []string{
		path + " does not match the run (-want +got)",
		"-- step 0/system --",
		`- 	"You count. Use the add tool.",`,
		`+ 	"You count carefully.",`,
		"REPROMPT_UPDATE=1 go test ./snapshots -run '^TestAgent$/^changed role$'",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the failure does not contain %q:\n%s", want, msg)
		}
	}
	// Only the system sections differ: the messages, replies and state are
	// the same.
	for _, unwanted := range []string{"/messages --", "/reply --", "/state --"} {
		if strings.Contains(msg, unwanted) {
			t.Errorf("the diff shows a section %q that did not change:\n%s", unwanted, msg)
		}
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Errorf("the golden file changed without %s", snapshots.UpdateEnv)
	}
}

func TestMismatchOtherVersion(t *testing.T) {
	dir := t.TempDir()
	path := golden(t, dir, "TestOld", role)
	data, _ := os.ReadFile(path)
	os.WriteFile(path, bytes.Replace(data, []byte(snapshots.Header), []byte("reprompt snapshot v0"), 1), 0o644)

	setEnv(t, "", "")
	f := runFake(t, "TestOld", func(tb testing.TB) {
		snapshots.Run(tb, counter(role), counterScript(), snapshots.Dir(dir))
	})
	if msg := f.failed(); !strings.Contains(msg, "written by another version") {
		t.Errorf("failure %q does not name the version", msg)
	}
}

func TestUpdateRewrites(t *testing.T) {
	dir := t.TempDir()
	path := golden(t, dir, "TestAgent", role)

	setEnv(t, "1", "")
	f := runFake(t, "TestAgent", func(tb testing.TB) {
		snapshots.Run(tb, counter("You count carefully."), counterScript(), snapshots.Dir(dir))
	})
	if msg := f.failed(); msg != "" {
		t.Fatalf("update failed: %s", msg)
	}
	if len(f.logs) != 1 || !strings.Contains(f.logs[0], "updated "+path) {
		t.Errorf("logs = %q, want one naming the updated file", f.logs)
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), "You count carefully.") {
		t.Errorf("the file was not rewritten:\n%s", data)
	}

	// Without the variable, the rewritten file now matches.
	setEnv(t, "", "")
	f = runFake(t, "TestAgent", func(tb testing.TB) {
		snapshots.Run(tb, counter("You count carefully."), counterScript(), snapshots.Dir(dir))
	})
	if msg := f.failed(); msg != "" {
		t.Errorf("after the update the comparison failed: %s", msg)
	}
}

func TestUpdateRefusedOnCI(t *testing.T) {
	dir := t.TempDir()
	path := golden(t, dir, "TestAgent", role)
	before, _ := os.ReadFile(path)

	setEnv(t, "1", "true")
	f := runFake(t, "TestAgent", func(tb testing.TB) {
		snapshots.Run(tb, counter("You count carefully."), counterScript(), snapshots.Dir(dir))
	})
	if len(f.fatals) != 1 || !strings.Contains(f.fatals[0], "never written on CI") {
		t.Errorf("fatals = %q, want one refusing to update on CI", f.fatals)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Errorf("the golden file was rewritten on CI")
	}
}

func TestMissingGolden(t *testing.T) {
	for _, tc := range []struct {
		name        string
		update, ci  string
		fail        string // substring of the failure; "" for none
		wantCreated bool
	}{
		{"on CI", "", "true", "it is not created on CI", false},
		{"locally", "", "", "REPROMPT_UPDATE=1 go test ./snapshots -run '^TestNew$'", false},
		{"updating", "1", "", "", true},
		{"updating on CI", "1", "1", "never written on CI", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			setEnv(t, tc.update, tc.ci)
			f := runFake(t, "TestNew", func(tb testing.TB) {
				snapshots.Run(tb, counter(role), counterScript(), snapshots.Dir(dir))
			})
			msg := f.failed()
			switch {
			case tc.fail == "" && msg != "":
				t.Errorf("unexpected failure: %s", msg)
			case tc.fail != "" && !strings.Contains(msg, tc.fail):
				t.Errorf("failure %q does not contain %q", msg, tc.fail)
			}
			_, err := os.Stat(filepath.Join(dir, "TestNew.txtar"))
			if created := err == nil; created != tc.wantCreated {
				t.Errorf("file created = %t, want %t", created, tc.wantCreated)
			}
		})
	}
}

func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	setEnv(t, "1", "")
	f := runFake(t, "TestFails", func(tb testing.TB) {
		snapshots.Run(tb, counter(role), snapshots.Script(snapshots.Fail(errors.New("boom"))), snapshots.Dir(dir))
	})
	if msg := f.failed(); !strings.Contains(msg, "the run failed") || !strings.Contains(msg, "boom") {
		t.Errorf("failure %q does not report the run's error", msg)
	}
	f = runFake(t, "TestSucceeds", func(tb testing.TB) {
		snapshots.Run(tb, counter(role), counterScript(), snapshots.Dir(dir), snapshots.ExpectError())
	})
	if msg := f.failed(); !strings.Contains(msg, "ExpectError") {
		t.Errorf("failure %q does not report the missing error", msg)
	}
}

// stamped declares a variable holding the time, which differs on every
// run.
func stamped(p *prompt.Prompt) error {
	p.DefSystem("role", "You tell the time.")
	p.Def("now", time.Now().Format(time.RFC3339Nano))
	p.User("What time is it?")
	return nil
}

var timestamp = regexp.MustCompile(`\d{4}-\d\d-\d\dT[0-9:.]+(Z|[+-]\d\d:\d\d)`)

// TestRedact is a golden file made stable by a redaction:
// testdata/TestRedact.txtar.
func TestRedact(t *testing.T) {
	redact := snapshots.Redact(timestamp, "<time>")
	snapshots.Run(t, stamped, snapshots.Script(snapshots.Text("Noon.")), redact)

	res, err := runtime.Run(context.Background(), snapshots.Script(snapshots.Text("Noon.")), stamped, runtime.Config{})
	if err != nil {
		t.Fatal(err)
	}
	out := string(snapshots.Format(res.Steps, nil, redact))
	if !strings.Contains(out, "<now><time></now>") || timestamp.MatchString(out) {
		t.Errorf("the time is not redacted:\n%s", out)
	}
	if raw := string(snapshots.Format(res.Steps, nil)); !timestamp.MatchString(raw) {
		t.Errorf("without Redact the time should be there:\n%s", raw)
	}
}

// TestFormatDeterministic formats the same run twice, in runs whose tool
// calls run concurrently.
func TestFormatDeterministic(t *testing.T) {
	run := func() string {
		m := snapshots.Script(
			snapshots.CallTools(
				snapshots.Call{Name: "add", Args: addArgs{N: 1}},
				snapshots.Call{Name: "add", Args: addArgs{N: 2}},
			),
			snapshots.Text("Three."),
		)
		res, err := runtime.Run(context.Background(), m, counter(role), runtime.Config{})
		return string(snapshots.Format(res.Steps, err))
	}
	first := run()
	for range 20 {
		if diff := cmp.Diff(first, run()); diff != "" {
			t.Fatalf("Format differs between runs (-first +later):\n%s", diff)
		}
	}
}

// TestFormatEscapesMarkers: text that looks like a section marker cannot
// start a section.
func TestFormatEscapesMarkers(t *testing.T) {
	fn := func(p *prompt.Prompt) error {
		p.DefSystem("role", "Reply in sections:\n-- answer --\n...")
		p.User("-- not a section --")
		return nil
	}
	res, err := runtime.Run(context.Background(), snapshots.Script(snapshots.Text("ok")), fn, runtime.Config{})
	if err != nil {
		t.Fatal(err)
	}
	out := string(snapshots.Format(res.Steps, nil))
	for line := range strings.Lines(out) {
		if strings.Contains(line, "answer") && line != `\-- answer --`+"\n" {
			t.Errorf("marker-like line written as %q", line)
		}
	}
	var markers []string
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, "-- ") {
			markers = append(markers, strings.TrimSpace(line))
		}
	}
	want := []string{"-- step 0/system --", "-- step 0/tools --", "-- step 0/messages --", "-- step 0/reply --", "-- step 0/state --", "-- end --"}
	if diff := cmp.Diff(want, markers); diff != "" {
		t.Errorf("section markers mismatch (-want +got):\n%s", diff)
	}
}
