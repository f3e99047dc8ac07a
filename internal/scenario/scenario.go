// Package scenario holds the prompts the benchmarks of several packages
// run, so that they measure the same work: runtime's BenchmarkScenarioS1
// and providers/openai's BenchmarkWire and BenchmarkFirstDelta all run S1.
// Only tests import it.
package scenario

import (
	"context"
	"strconv"
	"strings"

	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/prompt"
)

// The texts of S1's definitions.
var (
	s1Role  = strings.Repeat("You are a careful assistant that counts. ", 5)[:200]
	s1Rules = strings.Repeat("Call increment once per turn, never twice. ", 5)[:200]
	s1Style = strings.Repeat("Answer briefly and in plain words please. ", 5)[:200]
	s1Var   = strings.Repeat("value-", 9)[:50]
)

type phaseArgs struct {
	Phase string `json:"phase"`
}

type echoArgs struct {
	Text string `json:"text"`
}

// S1 is scenario S1, the per-step cost of the runtime itself, which must
// not grow with the length of the history: three system definitions, five
// variables, a data block, two states, four tools and four effects. The
// model is meant to call increment once per step and answer with text at
// the last one.
func S1(p *prompt.Prompt) error {
	p.DefSystem("role", s1Role)
	p.DefSystem("rules", s1Rules)
	p.DefSystem("style", s1Style)
	for i := range 5 {
		p.Def("var"+strconv.Itoa(i), s1Var)
	}
	p.DefData("config", map[string]any{
		"name": "s1", "mode": "bench", "retries": 3, "verbose": false, "weights": []float64{0.5, 1.5, 2.5},
	})
	count, setCount := prompt.State(p, "count", 0)
	phase, setPhase := prompt.State(p, "phase", "start")
	prompt.DefTool(p, "increment", "Add one to the count and return it.",
		func(ctx context.Context, _ struct{}) (int, error) {
			setCount.Set(ctx, count+1)
			return count + 1, nil
		})
	prompt.DefTool(p, "setPhase", "Set the phase.",
		func(ctx context.Context, a phaseArgs) (string, error) {
			setPhase.Set(ctx, a.Phase)
			return "ok", nil
		})
	prompt.DefTool(p, "noop", "Do nothing.",
		func(ctx context.Context, _ struct{}) (string, error) { return "", nil })
	echo := prompt.DefTool(p, "echo", "Repeat the text.",
		func(ctx context.Context, a echoArgs) (string, error) { return a.Text, nil })
	var seen int
	p.Effect(effects.Always, func(ctx context.Context, s *effects.Step) error {
		seen = len(s.Messages())
		return nil
	})
	p.Effect(effects.Once, func(ctx context.Context, s *effects.Step) error { return nil })
	p.Effect(effects.On(count), func(ctx context.Context, s *effects.Step) error { return nil })
	p.Effect(effects.On(phase), func(ctx context.Context, s *effects.Step) error {
		if phase == "done" {
			echo.Disable()
		}
		return nil
	})
	_ = seen
	p.User("Count as far as you can.")
	return nil
}
