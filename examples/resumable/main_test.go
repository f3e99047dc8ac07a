package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/reprompt/reprompt/snapshots"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	default:
		require.NoError(t, err)
	}
	return string(out), 0
}

func TestCrashThenResumeWithTheSameCommand(t *testing.T) {
	db := filepath.Join(t.TempDir(), "s.db")
	out, code := command(t, "-db", db, "-crash-at", "2")
	require.Equal(t, 3, code, "first run: exit %d, want 3:\n%s", code, out)
	require.Contains(t, out, "crashing hard in the middle of step 2", "first run: exit %d, want 3:\n%s", code, out)
	require.NotContains(t, out, "words.", "first run finished:\n%s", out)
	out, code = command(t, "-db", db, "-crash-at", "2")
	require.Zero(t, code, "second run: exit %d, want a resume at step 2 and the answer:\n%s", code, out)
	require.Contains(t, out, `resumed session "demo" at step 2`, "second run: exit %d, want a resume at step 2 and the answer:\n%s", code, out)
	require.Contains(t, out, "The 5 chapters have 32 words.", "second run: exit %d, want a resume at step 2 and the answer:\n%s", code, out)
	out, code = command(t, "-db", db)
	require.Zero(t, code, "third run: exit %d:\n%s", code, out)
	require.Contains(t, out, "already finished", "third run: exit %d:\n%s", code, out)
	out, code = command(t, "-db", db, "-fresh")
	require.Zero(t, code, "-fresh: exit %d:\n%s", code, out)
	require.Contains(t, out, "new session", "-fresh: exit %d:\n%s", code, out)
	require.Contains(t, out, "32 words", "-fresh: exit %d:\n%s", code, out)
}

// TestSnapshot snapshots every step of an uninterrupted run in
// testdata/TestSnapshot.txtar. After an intended change to the prompt,
// rewrite it with
//
//	REPROMPT_UPDATE=1 go test ./examples/resumable -run '^TestSnapshot$'
func TestSnapshot(t *testing.T) {
	never := false
	res := snapshots.Run(t, agent(-1, &never), model{})
	assert.Equal(t, "The 5 chapters have 32 words.", res.Text, "answer")
}
