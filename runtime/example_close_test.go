package runtime_test

import (
	"context"
	"fmt"

	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// A caller that may stop before the end of a run defers Close, which runs
// the cleanups the effects left pending (a watcher closed, a lock
// released). Run and the end of a run close by themselves.
func ExampleRunner_Close() {
	agent := func(p *prompt.Prompt) error {
		p.Effect(effects.Once, func(_ context.Context, s *effects.Step) error {
			fmt.Println("watcher opened")
			s.Cleanup(func() { fmt.Println("watcher closed") })
			return nil
		})
		prompt.DefTool(p, "wait", "Wait a little.",
			func(context.Context, struct{}) (string, error) { return "waited", nil })
		p.User("Wait three times.")
		return nil
	}
	model := snapshots.Script(
		snapshots.CallTool("wait", nil),
		snapshots.CallTool("wait", nil),
		snapshots.CallTool("wait", nil),
		snapshots.Text("Done."),
	)
	r := runtime.New(model, agent, runtime.Config{})
	defer r.Close()
	for step, err := range r.All(context.Background()) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("step", step.Number)
		if step.Number == 1 {
			break // seen enough: the deferred Close cleans up
		}
	}
	// Output:
	// watcher opened
	// step 0
	// step 1
	// watcher closed
}
