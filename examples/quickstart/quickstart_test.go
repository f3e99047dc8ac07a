package main

import (
	"os"
	"testing"

	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// TestMain fails the run when a golden file under testdata was used by no
// test (after a test was renamed, say).
func TestMain(m *testing.M) { os.Exit(snapshots.CheckUnused(m)) }

// TestQuickstart snapshots every step of the quickstart run in
// testdata/TestQuickstart.txtar: the system prompt, messages, tools, effects
// and why they ran, disables, reminders, replies, tool results and state.
// After an intended change to the prompt, rewrite the file with
//
//	REPROMPT_UPDATE=1 go test ./examples/quickstart -run '^TestQuickstart$'
//
// and review its diff.
func TestQuickstart(t *testing.T) {
	res := snapshots.Run(t, Agent, Script(), snapshots.Config(runtime.Config{MaxSteps: 20}))
	if len(res.Steps) != 7 {
		t.Errorf("the run took %d steps, want 7", len(res.Steps))
	}
}
