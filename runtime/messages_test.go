package runtime_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/snapshots"
)

// countingPrompt declares a user message whose text comes from state, and
// an effect that appends a message for good when the count reaches 2.
var countingPrompt = counting(func(count int) string { return fmt.Sprintf("Count: %d", count) })

func counting(text func(count int) string) prompt.Func {
	return func(p *prompt.Prompt) error { return countingBody(p, text) }
}

func countingBody(p *prompt.Prompt, text func(count int) string) error {
	count, setCount := prompt.State(p, "count", 0)
	p.DefSystem("role", "You count.")
	p.User(text(count)) // added once, at the first execution
	prompt.DefTool(p, "add", "Add one.", func(ctx context.Context, _ struct{}) (string, error) {
		setCount.Update(ctx, func(c int) int { return c + 1 })
		return "ok", nil
	})
	p.Effect(effects.On(count == 2), func(_ context.Context, s *effects.Step) error {
		if count == 2 {
			s.CommitAppend(defs.UserMessage("Two reached: stop counting."))
		}
		return nil
	})
	return nil
}

func countingScript() *snapshots.Model {
	return snapshots.Script(
		snapshots.CallTool("add", nil),
		snapshots.CallTool("add", nil),
		snapshots.CallTool("add", nil),
		snapshots.Text("done"),
	)
}

var wantCountingTranscript = []string{
	"user: Count: 0",
	"assistant:  {call_1 add {}}", "tool[call_1 add]: ok",
	"assistant:  {call_2 add {}}", "tool[call_2 add]: ok",
	"user: Two reached: stop counting.",
	"assistant:  {call_3 add {}}", "tool[call_3 add]: ok",
	"assistant: done",
}

// Issue 8 item 12: messages whose text comes from state do not pile up; a
// message added later is added by an effect, for good.
func TestMessagesFromStateDoNotPileUp(t *testing.T) {
	m := countingScript()
	res := run(t, m, countingPrompt, runtime.Config{})
	assert.Empty(t, cmp.Diff(wantCountingTranscript, transcriptOf(res.Transcript)), "transcript mismatch (-want +got)")
	// The appended message stays in every later request.
	last := m.Requests()[len(m.Requests())-1]
	require.Contains(t, transcriptOf(last.Messages), "user: Two reached: stop counting.")
}

// legacyStore saves checkpoints as versions before position (and, before
// that, call-site) identities wrote them: seen messages by role and text
// only.
type legacyStore struct{ session.Store }

func (s legacyStore) Save(ctx context.Context, cp *session.Checkpoint) error {
	all := cp.SeenMessages
	var legacy []string
	for _, id := range all {
		if !strings.HasPrefix(id, "#") && !strings.HasPrefix(id, "key:") {
			legacy = append(legacy, id)
		}
	}
	cp.SeenMessages = legacy
	err := s.Store.Save(ctx, cp) // sets cp.Seq
	cp.SeenMessages = all
	return err
}

// constantPrompt is countingPrompt with constant message texts, as a
// prompt written before messages were identified by call site would have
// needed them.
func constantPrompt(p *prompt.Prompt) error {
	p.DefMessage(defs.RoleAssistant, "I will count.")
	return countingBody(p, func(int) string { return "Count: 0" })
}

// A session resumes without adding its declared messages again, whether
// its checkpoints name them by position or (written by an older version)
// by role and text only.
func TestResumeDoesNotAddMessagesAgain(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		legacy bool
		fn     prompt.Func
		want   []string
	}{
		{"positions", false, countingPrompt, wantCountingTranscript},
		{"legacy ids", true, constantPrompt, append([]string{"assistant: I will count."}, wantCountingTranscript...)},
	}
	for _, tt := range tests {
		for stop := 1; stop <= 3; stop++ {
			t.Run(fmt.Sprintf("%s/%d", tt.name, stop), func(t *testing.T) {
				var store session.Store = session.NewMemory()
				if tt.legacy {
					store = legacyStore{store}
				}
				cfg := runtime.Config{Store: store, SessionID: "s"}
				m := countingScript()
				r := runtime.New(m, tt.fn, cfg)
				for range stop {
					_, err := r.Next(ctx)
					require.NoError(t, err)
				}
				cp, err := store.Latest(ctx, "s")
				require.NoError(t, err)
				hasPos := slices.ContainsFunc(cp.SeenMessages, func(id string) bool { return strings.HasPrefix(id, "#") })
				require.Equal(t, !tt.legacy, hasPos, "seen messages %q", cp.SeenMessages)
				for _, id := range cp.SeenMessages {
					require.NotContains(t, id, ".go:", "no source location in a checkpoint")
				}
				r2, err := runtime.Resume(ctx, m, tt.fn, cfg)
				require.NoError(t, err)
				res, err := r2.Run(ctx)
				require.NoError(t, err)
				assert.Empty(t, cmp.Diff(tt.want, transcriptOf(res.Transcript)), "transcript mismatch (-want +got)")
			})
		}
	}
}
