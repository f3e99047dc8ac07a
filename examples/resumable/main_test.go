package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprompt/reprompt/snapshots"
)

func TestMain(m *testing.M) {
	if os.Getenv("REPROMPT_RESUMABLE_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// command runs this program (the test binary standing in for it) with args
// and returns its output and exit code.
func command(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "REPROMPT_RESUMABLE_MAIN=1")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return string(out), 0
}

func TestCrashThenResumeWithTheSameCommand(t *testing.T) {
	db := filepath.Join(t.TempDir(), "s.db")
	out, code := command(t, "-db", db, "-crash-at", "2")
	if code != 3 || !strings.Contains(out, "crashing hard in the middle of step 2") {
		t.Fatalf("first run: exit %d, want 3:\n%s", code, out)
	}
	if strings.Contains(out, "words.") {
		t.Fatalf("first run finished:\n%s", out)
	}
	out, code = command(t, "-db", db, "-crash-at", "2")
	if code != 0 || !strings.Contains(out, `resumed session "demo" at step 2`) || !strings.Contains(out, "The 5 chapters have 32 words.") {
		t.Fatalf("second run: exit %d, want a resume at step 2 and the answer:\n%s", code, out)
	}
	out, code = command(t, "-db", db)
	if code != 0 || !strings.Contains(out, "already finished") {
		t.Fatalf("third run: exit %d:\n%s", code, out)
	}
	out, code = command(t, "-db", db, "-fresh")
	if code != 0 || !strings.Contains(out, "new session") || !strings.Contains(out, "32 words") {
		t.Fatalf("-fresh: exit %d:\n%s", code, out)
	}
}

// TestSnapshot snapshots every step of an uninterrupted run in
// testdata/TestSnapshot.txtar. After an intended change to the prompt,
// rewrite it with
//
//	REPROMPT_UPDATE=1 go test ./examples/resumable -run '^TestSnapshot$'
func TestSnapshot(t *testing.T) {
	never := false
	res := snapshots.Run(t, agent(-1, &never), model{})
	if got, want := res.Text, "The 5 chapters have 32 words."; got != want {
		t.Errorf("answer %q, want %q", got, want)
	}
}
