package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
)

// stepModel calls "tick" twice in parallel at each of its first six steps
// and answers at the seventh; its replies depend only on the step number.
type stepModel struct{}

func (stepModel) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	if req.Step >= 6 {
		return &llm.Reply{Message: defs.AssistantMessage("done")}, nil
	}
	return &llm.Reply{Message: defs.Message{Role: defs.RoleAssistant, Content: fmt.Sprint("step ", req.Step), ToolCalls: []defs.ToolCall{
		{ID: fmt.Sprintf("s%d-a", req.Step), Name: "tick", Arguments: json.RawMessage(`{}`)},
		{ID: fmt.Sprintf("s%d-b", req.Step), Name: "tick", Arguments: json.RawMessage(`{}`)},
	}}}, nil
}

// compacting is a prompt whose effects rewrite the transcript: after each
// reply, the results of earlier turns are trimmed (a new generation that
// shares a prefix with the previous one), and before a call, a transcript
// longer than eight messages is compacted to its first message (rewritten)
// and its last turn (a new generation that shares nothing).
func compacting(p *prompt.Prompt) error {
	k, setK := prompt.State(p, "k", 0)
	compactions, setCompactions := prompt.State(p, "compactions", 0)
	p.DefSystem("role", "You tick.")
	p.Def("k", fmt.Sprint(k))
	p.User("go")
	prompt.DefTool(p, "tick", "tick", func(ctx context.Context, _ struct{}) (string, error) {
		setK.Update(ctx, func(k int) int { return k + 1 })
		return "ticked " + prompt.CallID(ctx), nil
	}, prompt.Idempotent())
	p.Effect(effects.Always, func(ctx context.Context, s *effects.Step) error {
		msgs := s.Transcript()
		if len(msgs) <= 8 {
			return nil
		}
		last := 0
		for i, m := range msgs {
			if m.Role == defs.RoleAssistant {
				last = i
			}
		}
		first := msgs[0]
		first.Content = fmt.Sprintf("go (compacted %d times)", compactions+1)
		s.CommitMessages(append([]defs.Message{first}, msgs[last:]...))
		setCompactions.Set(ctx, compactions+1)
		return nil
	}, effects.Key("compact"))
	p.Effect(effects.Always, func(ctx context.Context, s *effects.Step) error {
		msgs := s.Transcript()
		last := len(msgs)
		for i, m := range msgs {
			if m.Role == defs.RoleAssistant {
				last = i
			}
		}
		out := append([]defs.Message(nil), msgs...)
		changed := false
		for i := range last {
			if out[i].Role == defs.RoleTool && !strings.HasPrefix(out[i].Content, "[trimmed]") {
				out[i].Content = "[trimmed] " + out[i].Content
				changed = true
			}
		}
		if changed {
			s.CommitMessages(out)
		}
		return nil
	}, effects.Key("trim"), effects.InPhase(effects.AfterReply))
	return nil
}

// TestKillAtEverySaveWithCommits kills a run whose effects commit rewrites
// of the transcript (trimming after replies, compaction before calls) at
// every checkpoint, before and after it is written, and resumes it: the
// run ends with the transcript and state of an uninterrupted run, and
// every checkpoint of the session still loads.
func TestKillAtEverySaveWithCommits(t *testing.T) {
	ctx := context.Background()
	cfg := func(st session.Store) runtime.Config { return runtime.Config{Store: st, SessionID: "commits"} }
	count := &killingStore{Store: session.NewMemory()}
	want, err := runtime.New(stepModel{}, compacting, cfg(count)).Run(ctx)
	require.NoError(t, err)
	total := count.saves
	wantK, err := runtime.StateOf[int](want, "k")
	require.NoError(t, err)
	wantCompactions, err := runtime.StateOf[int](want, "compactions")
	require.NoError(t, err)
	require.Equal(t, 12, wantK)
	require.Positive(t, wantCompactions)

	for k := 1; k <= total; k++ {
		for _, after := range []bool{false, true} {
			t.Run(fmt.Sprintf("save%d/after=%t", k, after), func(t *testing.T) {
				mem := session.NewMemory()
				kill := &killingStore{Store: mem, k: k, after: after}
				_, err := runtime.New(stepModel{}, compacting, cfg(kill)).Run(ctx)
				if err == nil {
					// Parallel calls that finish out of order share a save:
					// this run saved fewer times than the first.
					require.Less(t, kill.saves, k)
					return
				}
				require.ErrorIs(t, err, errCrash)
				r, err := runtime.Resume(ctx, stepModel{}, compacting, cfg(mem))
				if errors.Is(err, session.ErrNotFound) {
					r = runtime.New(stepModel{}, compacting, cfg(mem))
				} else {
					require.NoError(t, err)
				}
				got, err := r.Run(ctx)
				if !errors.Is(err, runtime.ErrDone) { // killed after the last save: the run had ended
					require.NoError(t, err)
				}
				require.NoError(t, runtime.ValidateMessages(got.Transcript))
				assert.Empty(t, cmp.Diff(want.Transcript, got.Transcript), "transcript differs from the uninterrupted run's (-want +got)")
				for _, name := range []string{"k", "compactions"} {
					w, _ := runtime.StateOf[int](want, name)
					g, err := runtime.StateOf[int](got, name)
					require.NoError(t, err)
					require.Equal(t, w, g, "state %s", name)
				}
				info, err := mem.Stat(ctx, "commits")
				require.NoError(t, err)
				for step := 0; step <= info.Step; step++ {
					_, err := mem.AtStep(ctx, "commits", step)
					require.NoError(t, err, "checkpoint of step %d", step)
				}
			})
		}
	}
}
