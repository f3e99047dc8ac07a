package temporal_test

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	rt "github.com/reprompt/reprompt/temporal"
)

func slogWarn() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// The histories in testdata were recorded from runs against a real server
// (REPROMPT_UPDATE=1 with the end-to-end tests): replaying them runs the
// workflow code again, and fails if it makes other commands than those
// recorded. So the runtime's loop in workflow code is deterministic: the
// prompt function, the effects, rendering (maps in DefData included), the
// tool calls' results in call order, continue-as-new.
func TestReplay(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no recorded histories in testdata")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			tl := &tools{}
			require.NoError(t, rt.RegisterWorkflow(r, e2eAgent(tl, e2eSteps), signalAgent(tl), decideAgent(tl)))
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(quiet(), f))
			require.Zero(t, tl.runs("stock")+tl.runs("charge")+tl.runs("slow")+tl.runs("pay"), "replay ran a tool")
		})
	}
}

// The replay test has teeth: workflow code that makes other commands than
// a history recorded (here it continues as new after 2 steps) fails it.
func TestReplayDetectsChangedCommands(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	tl := &tools{}
	changed := e2eAgent(tl, e2eSteps)
	changed.ContinueAfter = 2
	require.NoError(t, rt.RegisterWorkflow(r, changed))
	silent := sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	err := r.ReplayWorkflowHistoryFromJSONFile(silent, filepath.Join("testdata", "e2e_failover.json"))
	require.Error(t, err)
	t.Log(err)
}
