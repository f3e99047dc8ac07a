package viewer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
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

type shipArgs struct {
	To string `json:"to"`
}

// shipper looks a parcel up (idempotent: a resume runs it again) and
// ships it (not idempotent: a crash while it runs leaves it
// interrupted).
func shipper(p *prompt.Prompt) error {
	shipped, setShipped := prompt.State(p, "shipped", []string{})
	prompt.DefTool(p, "look", "Look a parcel up.", func(ctx context.Context, a shipArgs) (string, error) {
		return "a parcel for " + a.To, nil
	}, prompt.Idempotent())
	prompt.DefTool(p, "ship", "Ship a parcel.", func(ctx context.Context, a shipArgs) (string, error) {
		setShipped.Set(ctx, append(shipped, a.To))
		return "shipped to " + a.To, nil
	})
	p.User("Ship Ann's parcel.")
	return nil
}

// errDied is the error of every save of a process that died.
var errDied = errors.New("the process died")

// dyingStore is the store of a process that dies at the first Save for
// which dies reports true, before it is written: that Save and every
// later one fail.
type dyingStore struct {
	session.Store
	dies func(cp *session.Checkpoint) bool

	mu   sync.Mutex
	dead bool
}

func (s *dyingStore) Save(ctx context.Context, cp *session.Checkpoint) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead || s.dies(cp) {
		s.dead = true
		return errDied
	}
	return s.Store.Save(ctx, cp)
}

// afterReply reports the first save after the one that holds the model's
// reply of a step and none of its results: a process that dies there
// leaves a step that Resume completes (Step.Resumed).
func afterReply() func(cp *session.Checkpoint) bool {
	replied := false
	return func(cp *session.Checkpoint) bool {
		if replied {
			return true
		}
		replied = cp.Pending != nil && len(cp.Pending.Results) == 0
		return false
	}
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
// answered, compacted, sub-agents, typed answers, conversation turns,
// resumed after a crash with a call run again or interrupted), but for
// what only one of them holds (the store: tokens, durations, effect sites'
// lines; the golden file: the system prompt's text and the typed answer's
// declaration).
func TestStoreAndGoldenAgree(t *testing.T) {
	runOnce := func(ctx context.Context, r *runtime.Runner) ([]*runtime.Step, error) {
		res, err := r.Run(ctx)
		return runAll(nil, res, err)
	}
	for _, tt := range []struct {
		name  string
		fn    prompt.Func
		model func() *snapshots.Model
		drive drive
		// dies, if set, is the save the first process dies at (see
		// dyingStore): Resume then takes the run up in a second runner,
		// which drive drives too, with the same model.
		dies func() func(cp *session.Checkpoint) bool
		// shows are lines both renderings must hold: the marks of the
		// kind of step the case is about.
		shows []string
	}{
		{name: "approved and denied", fn: payer, model: payScript, drive: func(ctx context.Context, r *runtime.Runner) ([]*runtime.Step, error) {
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
		{name: "paused", fn: payer, model: payScript, drive: func(ctx context.Context, r *runtime.Runner) ([]*runtime.Step, error) {
			res, err := r.Run(ctx)
			return runAll(nil, res, err)
		}},
		{name: "answered", fn: asker, model: func() *snapshots.Model {
			return snapshots.Script(snapshots.CallTool("transfer", payArgs{"Ann", 50}), snapshots.Text("Sent."))
		}, drive: func(ctx context.Context, r *runtime.Runner) ([]*runtime.Step, error) {
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
		{name: "compacted, with a sub-agent", fn: agent, model: script, drive: func(ctx context.Context, r *runtime.Runner) ([]*runtime.Step, error) {
			res, err := r.Run(ctx)
			return runAll(nil, res, err)
		}},
		{name: "typed answer", fn: judge, model: func() *snapshots.Model {
			return snapshots.Script(snapshots.Answer(verdict{Guilty: false, Why: "alibi"}))
		}, drive: func(ctx context.Context, r *runtime.Runner) ([]*runtime.Step, error) {
			res, err := r.Run(ctx)
			return runAll(nil, res, err)
		}},
		{name: "conversation", fn: chatter, model: func() *snapshots.Model {
			return snapshots.Script(snapshots.Text("Hello."), snapshots.CallTool("remember", noteArgs{Text: "milk"}), snapshots.Text("Noted."))
		}, drive: func(ctx context.Context, r *runtime.Runner) ([]*runtime.Step, error) {
			res, err := r.Continue(ctx, "Hi.")
			if err != nil {
				return runAll(nil, res, err)
			}
			steps := res.Steps
			res, err = r.Continue(ctx, "Remember milk.")
			return runAll(steps, res, err)
		}},
		{name: "resumed", fn: shipper, model: func() *snapshots.Model {
			return snapshots.Script(snapshots.CallTool("look", shipArgs{"Ann"}), snapshots.Text("Found it."))
		}, drive: runOnce, dies: afterReply, shows: []string{
			"── step 0 [crashed, resumed] ──",
			"resumed: the run stopped after the model's reply and a resume completed the step; interrupted calls: none",
		}},
		{name: "interrupted", fn: shipper, model: func() *snapshots.Model {
			return snapshots.Script(snapshots.CallTools(
				snapshots.Call{Name: "look", Args: shipArgs{"Ann"}},
				snapshots.Call{Name: "ship", Args: shipArgs{"Ann"}},
			), snapshots.Text("Not shipped."))
		}, drive: runOnce, dies: afterReply, shows: []string{
			"── step 0 [crashed, resumed] ──",
			"resumed: the run stopped after the model's reply and a resume completed the step; interrupted calls: call_2",
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := session.NewMemory()
			m := tt.model()
			cfg := runtime.Config{Store: st, SessionID: "s"}
			if tt.dies != nil {
				cfg.Store = &dyingStore{Store: st, dies: tt.dies()}
			}
			r := runtime.New(m, tt.fn, cfg)
			defer r.Close()
			steps, err := tt.drive(t.Context(), r)
			if tt.dies != nil {
				require.ErrorIs(t, err, errDied, "the first process")
				cfg.Store = st
				resumed, rerr := runtime.Resume(t.Context(), m, tt.fn, cfg)
				require.NoError(t, rerr, "Resume")
				defer resumed.Close()
				var more []*runtime.Step
				more, err = tt.drive(t.Context(), resumed)
				steps = append(steps, more...)
			}
			require.NoError(t, err)
			golden := snapshots.Format(steps, nil)
			fromGolden, err := viewer.FromGolden("s.txtar", golden)
			require.NoError(t, err, "%s", golden)
			fromStore, err := viewer.FromStore(t.Context(), st, "s")
			require.NoError(t, err)
			want, got := shownAlike(t, fromGolden), shownAlike(t, fromStore)
			assert.Equal(t, want, got, "the session read from the store (+) and its golden file (-) show different things; golden file:\n%s", golden)
			for _, line := range tt.shows {
				assert.Contains(t, want, line, "the golden file's rendering")
				assert.Contains(t, got, line, "the store's rendering")
			}
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
