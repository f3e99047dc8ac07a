package viewer_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/cmd/reprompt/internal/showtext"
	"github.com/reprompt/reprompt/cmd/reprompt/internal/viewer"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/snapshots"
)

type payArgs struct {
	To     string `json:"to"`
	Amount int    `json:"amount"`
}

// payer pays; a payment over 100 waits for approval. An effect on the
// amount paid runs after each reply.
func payer(p *prompt.Prompt) error {
	paid, setPaid := prompt.State(p, "paid", 0)
	prompt.DefTool(p, "pay", "Pay.", func(ctx context.Context, a payArgs) (string, error) {
		setPaid.Set(ctx, paid+a.Amount)
		return fmt.Sprintf("paid %d to %s", a.Amount, a.To), nil
	}, prompt.NeedsApprovalIf(func(a payArgs) bool { return a.Amount > 100 }))
	p.Effect(effects.On(paid), func(ctx context.Context, s *effects.Step) error { return nil }, effects.InPhase(effects.AfterReply))
	p.User("Pay the rent, the gym and the car.")
	return nil
}

func payScript() *snapshots.Model {
	return snapshots.Script(
		snapshots.CallTools(
			snapshots.Call{ID: "call_1", Name: "pay", Args: payArgs{"landlord", 900}},
			snapshots.Call{ID: "call_2", Name: "pay", Args: payArgs{"gym", 30}},
			snapshots.Call{ID: "call_3", Name: "pay", Args: payArgs{"dealer", 400}},
		),
		snapshots.Text("Paid the rent and the gym."),
	)
}

// asker asks which account to pay from, and pays.
func asker(p *prompt.Prompt) error {
	prompt.DefTool(p, "transfer", "Transfer.", func(ctx context.Context, a payArgs) (string, error) {
		from, err := prompt.Ask[string](ctx, "From which account?")
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("sent %d to %s from %s", a.Amount, a.To, from), nil
	})
	p.User("Send 50 to Ann.")
	return nil
}

type verdict struct {
	Guilty bool   `json:"guilty"`
	Why    string `json:"why"`
}

// judge gives a typed answer.
func judge(p *prompt.Prompt) error {
	prompt.DefOutput[verdict](p, "verdict", "The verdict.")
	p.User("Judge.")
	return nil
}

// chatter keeps notes over turns.
func chatter(p *prompt.Prompt) error {
	notes, setNotes := prompt.State(p, "notes", []string{})
	prompt.DefTool(p, "remember", "Remember.", func(ctx context.Context, a noteArgs) (string, error) {
		setNotes.Set(ctx, append(notes, a.Text))
		return "noted", nil
	})
	return nil
}

// run drives r and returns every step it made, in order, and the error
// it ended with.
type drive func(ctx context.Context, r *runtime.Runner) ([]*runtime.Step, error)

func runAll(steps []*runtime.Step, res *runtime.Result, err error) ([]*runtime.Step, error) {
	if res != nil {
		steps = append(steps, res.Steps...)
	}
	return steps, err
}

// TestStoreAndGoldenAgree runs prompts into a store and renders, as text,
// the session read from the store and the golden file of the same steps:
// both show the same thing for every kind of step (paused, decided,
// answered, compacted, sub-agents, typed answers, conversation turns),
// but for what only one of them holds (the store: tokens, durations,
// effect sites' lines; the golden file: the system prompt's text and the
// typed answer's declaration).
func TestStoreAndGoldenAgree(t *testing.T) {
	for _, tt := range []struct {
		name  string
		fn    prompt.Func
		model func() *snapshots.Model
		drive drive
	}{
		{"approved and denied", payer, payScript, func(ctx context.Context, r *runtime.Runner) ([]*runtime.Step, error) {
			res, err := r.Run(ctx)
			if err != nil {
				return runAll(nil, res, err)
			}
			steps := res.Steps
			if err := r.Approve("call_1"); err != nil {
				return steps, err
			}
			if err := r.Deny("call_3", "Not this month."); err != nil {
				return steps, err
			}
			res, err = r.Run(ctx)
			return runAll(steps, res, err)
		}},
		{"paused", payer, payScript, func(ctx context.Context, r *runtime.Runner) ([]*runtime.Step, error) {
			res, err := r.Run(ctx)
			return runAll(nil, res, err)
		}},
		{"answered", asker, func() *snapshots.Model {
			return snapshots.Script(snapshots.CallTool("transfer", payArgs{"Ann", 50}), snapshots.Text("Sent."))
		}, func(ctx context.Context, r *runtime.Runner) ([]*runtime.Step, error) {
			res, err := r.Run(ctx)
			if err != nil || len(res.Awaiting) != 1 {
				return runAll(nil, res, fmt.Errorf("want one question, got %v, %w", res, err))
			}
			steps := res.Steps
			if err := r.Answer(res.Awaiting[0].CallID, "savings"); err != nil {
				return steps, err
			}
			res, err = r.Run(ctx)
			return runAll(steps, res, err)
		}},
		{"compacted, with a sub-agent", agent, script, func(ctx context.Context, r *runtime.Runner) ([]*runtime.Step, error) {
			res, err := r.Run(ctx)
			return runAll(nil, res, err)
		}},
		{"typed answer", judge, func() *snapshots.Model {
			return snapshots.Script(snapshots.Answer(verdict{Guilty: false, Why: "alibi"}))
		}, func(ctx context.Context, r *runtime.Runner) ([]*runtime.Step, error) {
			res, err := r.Run(ctx)
			return runAll(nil, res, err)
		}},
		{"conversation", chatter, func() *snapshots.Model {
			return snapshots.Script(snapshots.Text("Hello."), snapshots.CallTool("remember", noteArgs{Text: "milk"}), snapshots.Text("Noted."))
		}, func(ctx context.Context, r *runtime.Runner) ([]*runtime.Step, error) {
			res, err := r.Continue(ctx, "Hi.")
			if err != nil {
				return runAll(nil, res, err)
			}
			steps := res.Steps
			res, err = r.Continue(ctx, "Remember milk.")
			return runAll(steps, res, err)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := session.NewMemory()
			r := runtime.New(tt.model(), tt.fn, runtime.Config{Store: st, SessionID: "s"})
			defer r.Close()
			steps, err := tt.drive(t.Context(), r)
			require.NoError(t, err)
			golden := snapshots.Format(steps, nil)
			fromGolden, err := viewer.FromGolden("s.txtar", golden)
			require.NoError(t, err, "%s", golden)
			fromStore, err := viewer.FromStore(t.Context(), st, "s")
			require.NoError(t, err)
			want, got := shownAlike(t, fromGolden), shownAlike(t, fromStore)
			assert.Equal(t, want, got, "the session read from the store (+) and its golden file (-) show different things; golden file:\n%s", golden)
		})
	}
}

// shownAlike renders run as text, without what only one of a store and a
// golden file holds: tokens, durations, the lines of effect sites, notes
// on the source, system prompts' text, the typed answer's declaration.
func shownAlike(t *testing.T, run *viewer.Run) string {
	t.Helper()
	var strip func(steps []*viewer.Step)
	strip = func(steps []*viewer.Step) {
		for _, s := range steps {
			s.InputTokens, s.PrefixTokens, s.OutputTokens, s.DurationMS, s.Estimated = 0, 0, 0, 0, false
			s.System, s.SystemChanged = "", false
			for i := range s.Calls {
				s.Calls[i].DurationMS = 0
			}
			for i := range s.Effects {
				s.Effects[i].Site, _, _ = strings.Cut(s.Effects[i].Site, ":")
			}
			var notes []string
			for _, n := range s.Notes {
				if !strings.HasPrefix(n, "typed answer asked for:") {
					// A golden file does not tell a question from an
					// approval (steprec.Awaiting.Question is a store's).
					notes = append(notes, strings.Replace(n, "awaiting an answer:", "awaiting approval:", 1))
				}
			}
			s.Notes = notes
			for _, a := range s.Agents {
				strip(a.Steps)
				// No checkpoint holds a sub-agent's transcript: its steps'
				// requests, the arguments and results of their calls.
				for _, sub := range a.Steps {
					sub.Request, sub.Diff = nil, viewer.Diff{}
					for i := range sub.Calls {
						sub.Calls[i].Args, sub.Calls[i].Result, sub.Calls[i].IsError = "", "", false
					}
				}
			}
		}
	}
	strip(run.Steps)
	run.Title, run.Source, run.Notes = "s", "", nil
	var b bytes.Buffer
	require.NoError(t, showtext.Write(&b, run, showtext.Options{Width: -1, Steps: true}))
	return b.String()
}
