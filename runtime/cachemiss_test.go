package runtime_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// TestCacheMissCauses pins each cause Step.Cache names when a request's
// prefix breaks before the end of the previous request: every case changes
// one thing at one step (at), and every other step extends the previous
// request and has no cause (but those in also).
func TestCacheMissCauses(t *testing.T) {
	type stepFn func(p *prompt.Prompt, n int, search defs.Handle)
	cases := []struct {
		name string
		at   int
		fn   stepFn
		want string
		also map[int]string // other steps whose prefix broke, and why
	}{
		{name: "variable changed", at: 1, want: "prefix broke in <variables>: phase changed (one → two)",
			fn: func(p *prompt.Prompt, n int, _ defs.Handle) {
				v := "one"
				if n >= 1 {
					v = "two"
				}
				p.Def("phase", v)
			}},
		{name: "variable declared", at: 2, want: "prefix broke in <variables>: variable:extra declared",
			fn: func(p *prompt.Prompt, n int, _ defs.Handle) {
				if n >= 2 {
					p.Def("extra", "x")
				}
			}},
		{name: "system part removed", at: 1, want: "prefix broke in <rules>: system:rules removed",
			fn: func(p *prompt.Prompt, n int, _ defs.Handle) {
				if n < 1 {
					p.DefSystem("rules", "Be brief.")
				}
			}},
		{name: "system part changed", at: 2, want: "prefix broke in <rules>: rules changed (Be brief. → Be briefer.)",
			fn: func(p *prompt.Prompt, n int, _ defs.Handle) {
				text := "Be brief."
				if n >= 2 {
					text = "Be briefer."
				}
				p.DefSystem("rules", text)
			}},
		{name: "variable disabled by an effect", at: 1, want: "prefix broke in <variables>: variable:phase withdrawn (disabled by effect key:guard)",
			fn: func(p *prompt.Prompt, n int, _ defs.Handle) {
				phase := p.Def("phase", "one")
				p.Effect(effects.Always, func(ctx context.Context, s *effects.Step) error {
					if s.Number >= 1 {
						phase.Disable()
					}
					return nil
				}, effects.Key("guard"))
			}},
		{name: "tool disabled by an effect", at: 1, want: "tool list changed: search withdrawn (disabled by effect key:guard)",
			fn: func(p *prompt.Prompt, n int, search defs.Handle) {
				p.Effect(effects.Always, func(ctx context.Context, s *effects.Step) error {
					if s.Number >= 1 {
						search.Disable()
					}
					return nil
				}, effects.Key("guard"))
			}},
		{name: "tool disabled by one of two effects", at: 1, want: "tool list changed: search withdrawn (disabled by effect key:guard)",
			fn: func(p *prompt.Prompt, n int, search defs.Handle) {
				p.Effect(effects.Always, func(ctx context.Context, s *effects.Step) error { return nil }, effects.Key("idle"))
				p.Effect(effects.Always, func(ctx context.Context, s *effects.Step) error {
					if s.Number >= 1 {
						search.Disable()
					}
					return nil
				}, effects.Key("guard"))
				p.Effect(effects.Always, func(ctx context.Context, s *effects.Step) error {
					if s.Number >= 1 {
						search.Disable() // again: the first to disable is named
					}
					return nil
				}, effects.Key("late"), effects.InPhase(effects.BeforeCall))
			}},
		{name: "tool disabled by the prompt function", at: 1, want: "tool list changed: search withdrawn (disabled by the prompt function)",
			fn: func(p *prompt.Prompt, n int, search defs.Handle) {
				if n >= 1 {
					search.Disable()
				}
				// An effect that runs but disables nothing is not named.
				p.Effect(effects.Always, func(ctx context.Context, s *effects.Step) error { return nil }, effects.Key("idle"))
			}},
		{name: "system part limited by an effect", at: 1, want: "prefix broke in <rules>: system:rules withdrawn (limited by effect key:focus)",
			fn: func(p *prompt.Prompt, n int, _ defs.Handle) {
				p.DefSystem("rules", "Be brief.")
				p.Effect(effects.Always, func(ctx context.Context, s *effects.Step) error {
					if s.Number >= 1 {
						s.LimitSystems("role")
					}
					return nil
				}, effects.Key("focus"))
			}},
		{name: "tool enabled again", at: 2, want: "tool list changed: search enabled again",
			also: map[int]string{1: "tool list changed: search withdrawn (disabled by effect key:guard)"},
			fn: func(p *prompt.Prompt, n int, search defs.Handle) {
				p.Effect(effects.Always, func(ctx context.Context, s *effects.Step) error {
					if s.Number == 1 {
						search.Disable()
					}
					return nil
				}, effects.Key("guard"))
			}},
		{name: "tool declared", at: 1, want: "tool list changed: fetch declared",
			fn: func(p *prompt.Prompt, n int, _ defs.Handle) {
				if n >= 1 {
					prompt.DefTool(p, "fetch", "Fetch.", func(ctx context.Context, _ struct{}) (string, error) { return "ok", nil })
				}
			}},
		{name: "reminder dropped", at: 2, want: "reminder tool:search of step 1 dropped (effect key:nudge)",
			fn: func(p *prompt.Prompt, n int, search defs.Handle) {
				p.Effect(effects.Always, func(ctx context.Context, s *effects.Step) error {
					if s.Number == 1 {
						search.Remind()
					}
					return nil
				}, effects.Key("nudge"))
			}},
		{name: "commit", at: 2, want: "transcript rewritten by commit (effect key:compact)",
			fn: func(p *prompt.Prompt, n int, _ defs.Handle) {
				p.Effect(effects.Always, func(ctx context.Context, s *effects.Step) error {
					if s.Number == 2 {
						msgs := append([]defs.Message(nil), s.Transcript()...)
						msgs[0].Content = "search, briefly"
						s.CommitMessages(msgs)
					}
					return nil
				}, effects.Key("compact"))
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			fn := func(p *prompt.Prompt) error {
				p.DefSystem("role", "You search.")
				search := prompt.DefTool(p, "search", "Search.", func(ctx context.Context, _ struct{}) (string, error) { return "found", nil })
				tc.fn(p, n, search)
				n++
				p.User("search")
				return nil
			}
			m := snapshots.Script(
				snapshots.CallTool("search", struct{}{}),
				snapshots.CallTool("search", struct{}{}),
				snapshots.CallTool("search", struct{}{}),
				snapshots.Text("done"),
			)
			res, err := runtime.Run(context.Background(), m, fn, runtime.Config{})
			require.NoError(t, err)
			require.Len(t, res.Steps, 4, "steps")
			for i, s := range res.Steps {
				want := tc.also[i]
				if i == tc.at {
					want = tc.want
				}
				assert.Equal(t, want, s.Cache, "step %d: Cache", i)
				if i == tc.at {
					assert.Less(t, s.PrefixTokens, res.Steps[i-1].InputTokens, "step %d: PrefixTokens below the previous request", i)
				}
			}
		})
	}
}
