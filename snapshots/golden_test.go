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
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

const role = "You count. Use the add tool."

// TestGolden is the round trip on a committed golden file:
// testdata/TestGolden.txtar.
func TestGolden(t *testing.T) {
	res := snapshots.Run(t, counter(role), counterScript())
	assert.Equal(t, "The count is three.", res.Text, "final text")
	assertFormatStep(t, res.Steps)
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
	require.Empty(t, f.failed(), "writing the golden file failed")
	path := filepath.Join(dir, filepath.FromSlash(name)+".txtar")
	_, err := os.Stat(path)
	require.NoError(t, err, "golden file not written")
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
	require.Len(t, f.errors, 1, "got errors %q, fatals %q; want one error", f.errors, f.fatals)
	require.Empty(t, f.fatals, "got errors %q, fatals %q; want one error", f.errors, f.fatals)
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
		assert.Contains(t, msg, want, "the failure does not contain %q:\n%s", want, msg)
	}
	// Only the system sections differ: the messages, replies and state are
	// the same.
	for _, unwanted := range []string{"/messages --", "/reply --", "/state --"} {
		assert.NotContains(t, msg, unwanted, "the diff shows a section %q that did not change:\n%s", unwanted, msg)
	}
	after, _ := os.ReadFile(path)
	assert.True(t, bytes.Equal(before, after), "the golden file changed without %s", snapshots.UpdateEnv)
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
	assert.Contains(t, f.failed(), "written by another version", "the failure does not name the version")
}

func TestUpdateRewrites(t *testing.T) {
	dir := t.TempDir()
	path := golden(t, dir, "TestAgent", role)

	setEnv(t, "1", "")
	f := runFake(t, "TestAgent", func(tb testing.TB) {
		snapshots.Run(tb, counter("You count carefully."), counterScript(), snapshots.Dir(dir))
	})
	require.Empty(t, f.failed(), "update failed")
	if assert.Len(t, f.logs, 1, "logs = %q, want one naming the updated file", f.logs) {
		assert.Contains(t, f.logs[0], "updated "+path, "logs = %q, want one naming the updated file", f.logs)
	}
	data, _ := os.ReadFile(path)
	assert.Contains(t, string(data), "You count carefully.", "the file was not rewritten:\n%s", data)

	// Without the variable, the rewritten file now matches.
	setEnv(t, "", "")
	f = runFake(t, "TestAgent", func(tb testing.TB) {
		snapshots.Run(tb, counter("You count carefully."), counterScript(), snapshots.Dir(dir))
	})
	assert.Empty(t, f.failed(), "after the update the comparison failed")
}

func TestUpdateRefusedOnCI(t *testing.T) {
	dir := t.TempDir()
	path := golden(t, dir, "TestAgent", role)
	before, _ := os.ReadFile(path)

	setEnv(t, "1", "true")
	f := runFake(t, "TestAgent", func(tb testing.TB) {
		snapshots.Run(tb, counter("You count carefully."), counterScript(), snapshots.Dir(dir))
	})
	if assert.Len(t, f.fatals, 1, "fatals = %q, want one refusing to update on CI", f.fatals) {
		assert.Contains(t, f.fatals[0], "never written on CI", "fatals = %q, want one refusing to update on CI", f.fatals)
	}
	after, _ := os.ReadFile(path)
	assert.True(t, bytes.Equal(before, after), "the golden file was rewritten on CI")
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
			if tc.fail == "" {
				assert.Empty(t, msg, "unexpected failure")
			} else {
				assert.Contains(t, msg, tc.fail, "the failure does not say what failed")
			}
			_, err := os.Stat(filepath.Join(dir, "TestNew.txtar"))
			created := err == nil
			assert.Equal(t, tc.wantCreated, created, "file created = %t, want %t", created, tc.wantCreated)
		})
	}
}

func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	setEnv(t, "1", "")
	f := runFake(t, "TestFails", func(tb testing.TB) {
		snapshots.Run(tb, counter(role), snapshots.Script(snapshots.Fail(errors.New("boom"))), snapshots.Dir(dir))
	})
	msg := f.failed()
	assert.Contains(t, msg, "the run failed", "the failure does not report the run's error")
	assert.Contains(t, msg, "boom", "the failure does not report the run's error")
	f = runFake(t, "TestSucceeds", func(tb testing.TB) {
		snapshots.Run(tb, counter(role), counterScript(), snapshots.Dir(dir), snapshots.ExpectError())
	})
	assert.Contains(t, f.failed(), "ExpectError", "the failure does not report the missing error")
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
	require.NoError(t, err)
	out := string(snapshots.Format(res.Steps, nil, redact))
	assert.Contains(t, out, "<now><time></now>", "the time is not redacted")
	assert.NotRegexp(t, timestamp, out, "the time is not redacted")
	raw := string(snapshots.Format(res.Steps, nil))
	assert.Regexp(t, timestamp, raw, "without Redact the time should be there")
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
		require.Empty(t, cmp.Diff(first, run()), "Format differs between runs (-first +later)")
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
	require.NoError(t, err)
	out := string(snapshots.Format(res.Steps, nil))
	for line := range strings.Lines(out) {
		if strings.Contains(line, "answer") {
			assert.Equal(t, `\-- answer --`+"\n", line, "marker-like line written as %q", line)
		}
	}
	var markers []string
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, "-- ") {
			markers = append(markers, strings.TrimSpace(line))
		}
	}
	want := []string{"-- step 0/system --", "-- step 0/tools --", "-- step 0/messages --", "-- step 0/reply --", "-- step 0/state --", "-- end --"}
	assert.Empty(t, cmp.Diff(want, markers), "section markers mismatch (-want +got)")
}
