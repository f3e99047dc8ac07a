package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects/builtin"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
)

// stepReader reads file i at step i until its last step, and answers a
// summary request (continued, with the run's tools, or not) with a text
// that names the request's step: its replies depend on the request only.
type stepReader struct{ last int }

func (m stepReader) Generate(_ context.Context, req *llm.Request) (*llm.Reply, error) {
	if req.Purpose == llm.PurposeSummary {
		return &llm.Reply{Message: defs.AssistantMessage(fmt.Sprintf("Read files up to %d (summary of %d messages, %d tools).", req.Step, len(req.Messages), len(req.Tools)))}, nil
	}
	if req.Step >= m.last {
		return &llm.Reply{Message: defs.AssistantMessage("All read.")}, nil
	}
	args, _ := json.Marshal(readArgs{Path: "file" + strconv.Itoa(req.Step) + ".go"})
	return &llm.Reply{Message: defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: "call_" + strconv.Itoa(req.Step), Name: "read_file", Arguments: args}}}}, nil
}

// idempotentReader is longRunAgent with read_file idempotent, so that a
// resumed step runs again a read the crash cut short, as the run did.
func idempotentReader() prompt.Func {
	cfg := builtin.Defaults(builtin.Profile{Window: 12_000, OutputReserve: 2_000})
	return func(p *prompt.Prompt) error {
		p.DefSystem("role", "You are a coding agent working in a Go repository. Read code, change it, run the tests.")
		prompt.DefTool(p, "read_file", "Read a file of the repository.",
			func(ctx context.Context, a readArgs) (string, error) {
				i, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(a.Path, "file"), ".go"))
				if err != nil {
					return "", err
				}
				return longRunFile(i), nil
			}, prompt.Idempotent())
		cfg.Register(p)
		p.User("Read the files one by one and report.")
		return nil
	}
}

// TestKillAtEverySaveWithContinuedSummaries kills a run under
// builtin.Defaults (trimming that declares its rewrites, compaction whose
// summaries continue the run's request) at every checkpoint, before and
// after it is written, and resumes it: the run ends with the transcript of
// an uninterrupted run.
func TestKillAtEverySaveWithContinuedSummaries(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 60-step run twice per save")
	}
	ctx := context.Background()
	const steps = 60
	model := stepReader{last: steps - 1}
	cfg := func(st session.Store) runtime.Config {
		return runtime.Config{Store: st, SessionID: "continued", Window: 12_000, Reserve: 2_000, MaxSteps: steps + 1}
	}
	count := &killingStore{Store: session.NewMemory()}
	want, err := runtime.New(model, idempotentReader(), cfg(count)).Run(ctx)
	require.NoError(t, err)
	summaries := 0
	for _, s := range want.Steps {
		for _, sum := range s.Summaries {
			require.NotEmpty(t, sum.Request.Tools, "step %d: a summary not continued", s.Number)
			summaries++
		}
	}
	require.Positive(t, summaries, "summaries in the uninterrupted run")
	total := count.saves

	for k := 1; k <= total; k++ {
		for _, after := range []bool{false, true} {
			t.Run(fmt.Sprintf("save%d/after=%t", k, after), func(t *testing.T) {
				mem := session.NewMemory()
				kill := &killingStore{Store: mem, k: k, after: after}
				_, err := runtime.New(model, idempotentReader(), cfg(kill)).Run(ctx)
				require.ErrorIs(t, err, errCrash)
				r, err := runtime.Resume(ctx, model, idempotentReader(), cfg(mem))
				if errors.Is(err, session.ErrNotFound) {
					r = runtime.New(model, idempotentReader(), cfg(mem))
				} else {
					require.NoError(t, err)
				}
				got, err := r.Run(ctx)
				if !errors.Is(err, runtime.ErrDone) {
					require.NoError(t, err)
				}
				require.NoError(t, runtime.ValidateMessages(got.Transcript))
				assert.Empty(t, cmp.Diff(want.Transcript, got.Transcript), "transcript differs from the uninterrupted run's (-want +got)")
			})
		}
	}
}
