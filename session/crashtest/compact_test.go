package crashtest

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session/sqlite"
	"github.com/stretchr/testify/require"
)

// compactEnv makes the child run compactModel and compactAgent.
const compactEnv = "REPROMPT_CRASHTEST_COMPACT"

// compactModel makes the calls of model at each step, numbered by the
// request's step (the transcript is compacted: counting its messages would
// not tell the step), and answers after the last. Its calls have the same
// ids at every step, as servers that number the calls of a reply send
// them: the runtime gives them ids unique in the run, which the ledger
// takes as idempotency keys, also across a compaction and a resume.
type compactModel struct{}

func (compactModel) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	k := req.Step
	usage := llm.Usage{InputTokens: 100 + k, OutputTokens: 10}
	if k >= steps {
		return &llm.Reply{Message: defs.AssistantMessage(fmt.Sprintf("done after %d steps", k)), Usage: usage}, nil
	}
	return &llm.Reply{Message: defs.Message{Role: defs.RoleAssistant, Content: fmt.Sprint("step ", k), ToolCalls: []defs.ToolCall{
		{ID: "call_0", Name: "add", Arguments: json.RawMessage(fmt.Sprintf(`{"n":%d}`, k))},
		{ID: "call_1", Name: "add", Arguments: json.RawMessage(fmt.Sprintf(`{"n":%d}`, 100+k))},
	}}, Usage: usage}, nil
}

// compactAgent is agent with two effects that rewrite the transcript, so
// that kills strike while checkpoints of new generations are written:
// after each reply the results of earlier turns are trimmed (a generation
// that shares a prefix with the one before), and before a call a
// transcript of more than 12 messages is compacted to its first message,
// rewritten, and its last turn (a generation that shares nothing).
func compactAgent(l *ledger) prompt.Func {
	inner := agent(l, false)
	return func(p *prompt.Prompt) error {
		if err := inner(p); err != nil {
			return err
		}
		compactions, setCompactions := prompt.State(p, "compactions", 0)
		p.Effect(effects.Always, func(ctx context.Context, s *effects.Step) error {
			msgs := s.Transcript()
			if len(msgs) <= 12 {
				return nil
			}
			last := lastAssistant(msgs)
			first := msgs[0]
			first.Content = fmt.Sprintf("Add the numbers. (compacted %d times)", compactions+1)
			s.CommitMessages(append([]defs.Message{first}, msgs[last:]...))
			setCompactions.Set(ctx, compactions+1)
			return nil
		}, effects.Key("compact"))
		p.Effect(effects.Always, func(ctx context.Context, s *effects.Step) error {
			msgs := s.Transcript()
			out := append([]defs.Message(nil), msgs...)
			changed := false
			for i := range lastAssistant(msgs) {
				if out[i].Role == defs.RoleTool && !strings.HasPrefix(out[i].Content, "[trimmed]") {
					out[i].Content, changed = "[trimmed] "+out[i].Content, true
				}
			}
			if changed {
				s.CommitMessages(out)
			}
			return nil
		}, effects.Key("trim"), effects.InPhase(effects.AfterReply))
		return nil
	}
}

func lastAssistant(msgs []defs.Message) int {
	last := len(msgs)
	for i, m := range msgs {
		if m.Role == defs.RoleAssistant {
			last = i
		}
	}
	return last
}

// TestCrashResumeWithCompaction kills the child at random moments of a
// run whose effects rewrite the transcript at every step (trimming) and
// compact it every few steps, resuming it after each kill: the outcome is
// that of an uninterrupted run, every call ran exactly once, and every
// kill left a checkpoint that loads.
func TestCrashResumeWithCompaction(t *testing.T) {
	if testing.Short() {
		t.Skip("starts many processes")
	}
	t.Setenv(compactEnv, "1") // inherited by the children
	rng := crashRNG(t)
	refDir := t.TempDir()
	ref, err := sqlite.Open(filepath.Join(refDir, "sessions.db"))
	require.NoError(t, err)
	start := time.Now()
	_, err = runtime.Run(context.Background(), compactModel{}, compactAgent(newLedger(refDir)), runtime.Config{Store: ref, SessionID: sessionID, MaxSteps: steps + 5})
	require.NoError(t, err)
	runTime := time.Since(start)
	want := outcomeOf(t, ref)
	ref.Close()
	require.True(t, want.Done, "uninterrupted run: done %t, %v compactions", want.Done, want.State["compactions"])
	require.GreaterOrEqual(t, want.State["compactions"].(float64), 5.0, "uninterrupted run: done %t, %v compactions", want.Done, want.State["compactions"])
	crashRounds(t, rng, false, 30, runTime, func(round, kills int, dir string, got outcome) {
		require.NoError(t, runtime.ValidateMessages(got.Transcript), "round %d (%d kills)", round, kills)
		require.Equal(t, want, got, "round %d (%d kills): outcome differs from the uninterrupted run", round, kills)
		checkLedger(t, dir, kills)
	})
}
