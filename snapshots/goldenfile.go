package snapshots

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
)

// Golden compares got with the golden file at path (relative to the
// package directory, where go test runs), by the rules Run follows for its
// step files, so that every golden file of a module is updated by one
// switch:
//
//   - When the file matches got, Golden does nothing. Line ends "\r\n" in
//     the file and in got read as "\n", so a golden file does not tell
//     them apart.
//   - When it differs, Golden fails t with the file's path, a go-cmp diff
//     (-want +got) of each "-- name --" section that differs (of the whole
//     text, line by line, when neither has sections), and the command that
//     rewrites the file.
//   - With UpdateEnv set to anything but "", "0", "false", "no" or "off",
//     Golden writes got to path instead (creating the file and its
//     directory), and logs that it did.
//   - With CIEnv set likewise, a missing file fails t instead of being
//     created, and UpdateEnv set as well fails t: golden files are never
//     written on CI.
//
// Golden is for test output other than a run's steps: a summariser's
// input, a rendered document. CheckUnused does not consider the files it
// compares.
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	checkGolden(t, path, got, "the test's output", nil)
}

// checkGolden compares got with the golden file at path, or writes it,
// following the update switch (UpdateEnv, CIEnv) that Golden documents.
// what names got in the failure ("the run"); note, if not nil, returns a
// line to print before the diff of a mismatch (or "").
func checkGolden(t testing.TB, path string, got []byte, what string, note func(want []byte) string) {
	t.Helper()
	update, ci := envOn(UpdateEnv), envOn(CIEnv)
	cmd := updateCommand(t.Name())
	if update && ci {
		t.Fatalf("snapshots: %s and %s are both set: golden files are never written on CI (%s). Update them locally and commit them", UpdateEnv, CIEnv, path)
		return
	}
	want, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		switch {
		case update:
			writeGolden(t, path, got)
			t.Logf("snapshots: created %s", path)
		case ci:
			t.Fatalf("snapshots: golden file %s is missing, and %s is set: it is not created on CI. Create it locally with\n\t%s\nand commit it", path, CIEnv, cmd)
		default:
			t.Fatalf("snapshots: golden file %s is missing. Create it with\n\t%s", path, cmd)
		}
		return
	}
	if err != nil {
		t.Fatalf("snapshots: %v", err)
		return
	}
	// A checkout may have turned the file's line ends into "\r\n"; and
	// the text written holds "\r\n" where got does (a system prompt or a
	// tool result read from a Windows file), which reads back as "\n":
	// both sides compare with "\n", or an updated file would never match.
	want = bytes.ReplaceAll(want, []byte("\r\n"), []byte("\n"))
	if bytes.Equal(want, bytes.ReplaceAll(got, []byte("\r\n"), []byte("\n"))) {
		return
	}
	if update {
		writeGolden(t, path, got)
		t.Logf("snapshots: updated %s", path)
		return
	}
	var msg strings.Builder
	fmt.Fprintf(&msg, "snapshots: %s does not match %s (-want +got):\n", path, what)
	if note != nil {
		if n := note(want); n != "" {
			msg.WriteString(n + "\n")
		}
	}
	msg.WriteString(diffText(string(want), string(got)))
	fmt.Fprintf(&msg, "If the change is intended, update the golden file with\n\t%s", cmd)
	t.Errorf("%s", msg.String())
}

// diffText returns the diff of want and got by section (see diffSections),
// or line by line when neither has a "-- name --" section.
func diffText(want, got string) string {
	if len(splitSections(want)) == 1 && len(splitSections(got)) == 1 {
		return gocmp.Diff(lines(want), lines(got))
	}
	return diffSections(want, got)
}
