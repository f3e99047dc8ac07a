package runtime_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
)

// A checkpoint names hooks by position and key only, never by source
// location: a run saved by one build of a prompt resumes under a build in
// which the prompt's lines moved and its function was renamed, and goes on
// as if it had not stopped: no declared message added again, no effect run
// again. moverV1 and movedAndRenamedV2 are the two builds: the same hooks
// in the same order, on other lines, in functions of other names (each
// calls its hooks itself: a shared helper would give both the same sites).
func TestResumeAfterTheSourceMoved(t *testing.T) {
	ctx := context.Background()
	var log []string
	v1, v2 := moverV1(&log), movedAndRenamedV2(&log)

	ref := run(t, countingScript(), v1, runtime.Config{})
	refLog := log

	for stop := 1; stop <= 3; stop++ {
		t.Run(fmt.Sprintf("stop after %d", stop), func(t *testing.T) {
			log = nil
			store := session.NewMemory()
			cfg := runtime.Config{Store: store, SessionID: "s"}
			m := countingScript()
			r := runtime.New(m, v1, cfg)
			for range stop {
				_, err := r.Next(ctx)
				require.NoError(t, err)
			}
			cp, err := store.Latest(ctx, "s")
			require.NoError(t, err)
			for _, id := range cp.SeenMessages {
				assert.NotContains(t, id, ".go", "a source file in a checkpoint's identities")
			}
			r2, err := runtime.Resume(ctx, m, v2, cfg)
			require.NoError(t, err)
			res, err := r2.Run(ctx)
			require.NoError(t, err)
			assert.Equal(t, transcriptOf(ref.Transcript), transcriptOf(res.Transcript), "the transcript of a run that did not stop")
			assert.Equal(t, refLog, log, "effect runs: none again after the resume, none missed")
		})
	}
}

func moverV1(log *[]string) prompt.Func {
	return func(p *prompt.Prompt) error {
		count, setCount := prompt.State(p, "count", 0)
		p.DefSystem("role", "You count.")
		p.User("Count to three.")
		p.DefMessage(defs.RoleAssistant, "I will count.")
		prompt.DefTool(p, "add", "Add one.", func(ctx context.Context, _ struct{}) (string, error) {
			setCount.Update(ctx, func(c int) int { return c + 1 })
			return "ok", nil
		})
		p.Effect(effects.Once, func(context.Context, *effects.Step) error {
			*log = append(*log, "once")
			return nil
		})
		p.Effect(effects.On(count), func(_ context.Context, s *effects.Step) error {
			*log = append(*log, fmt.Sprintf("count %d at step %d", count, s.Number))
			return nil
		})
		p.User(fmt.Sprintf("Started at %d.", count))
		return nil
	}
}

// Lines between the two builds, as an edit above a prompt moves it.
var _ = []string{
	"",
	"",
	"",
}

func movedAndRenamedV2(log *[]string) prompt.Func {
	return func(p *prompt.Prompt) error {
		count, setCount := prompt.State(p, "count", 0)

		p.DefSystem("role", "You count.")

		p.User("Count to three.")
		p.DefMessage(defs.RoleAssistant, "I will count.")

		prompt.DefTool(p, "add", "Add one.", func(ctx context.Context, _ struct{}) (string, error) {
			setCount.Update(ctx, func(c int) int { return c + 1 })
			return "ok", nil
		})

		p.Effect(effects.Once, func(context.Context, *effects.Step) error {
			*log = append(*log, "once")
			return nil
		})

		p.Effect(effects.On(count), func(_ context.Context, s *effects.Step) error {
			*log = append(*log, fmt.Sprintf("count %d at step %d", count, s.Number))
			return nil
		})

		p.User(fmt.Sprintf("Started at %d.", count))
		return nil
	}
}
