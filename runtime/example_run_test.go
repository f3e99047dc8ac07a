package runtime_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

func ExampleRun() {
	agent := func(p *prompt.Prompt) error {
		count, setCount := prompt.State(p, "count", 0)
		p.DefSystem("role", "You count.")
		p.Def("count", strconv.Itoa(count))
		prompt.DefTool(p, "increment", "Add one.", func(ctx context.Context, _ struct{}) (int, error) {
			setCount.Update(ctx, func(n int) int { return n + 1 })
			return count + 1, nil
		})
		p.Effect(effects.On(effects.Named("count", count)), func(_ context.Context, s *effects.Step) error {
			fmt.Printf("step %d: effect runs (%s)\n", s.Number, s.Phase)
			return nil
		})
		p.User("Count to two.")
		return nil
	}
	model := snapshots.Script(
		snapshots.CallTool("increment", nil),
		snapshots.CallTool("increment", nil),
		snapshots.Text("Two."),
	)
	res, err := runtime.Run(context.Background(), model, agent, runtime.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, req := range model.Requests() {
		fmt.Printf("%q\n", req.System[strings.Index(req.System, "<count>"):])
	}
	fmt.Println(res.Text, len(res.Steps), "steps")
	// Output:
	// step 0: effect runs (before-call)
	// step 1: effect runs (before-call)
	// step 2: effect runs (before-call)
	// "<count>0</count>\n</variables>"
	// "<count>1</count>\n</variables>"
	// "<count>2</count>\n</variables>"
	// Two. 3 steps
}
