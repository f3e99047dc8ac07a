package prompt_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// A disable lasts one step: it is part of that step's request, like
// everything the prompt function declares. To keep a tool disabled, keep
// the decision in state and apply it in the prompt function, which runs
// before every step. An effect that makes the decision (it runs only when
// its dependencies change) sets that state, and disables the tool for the
// current step too, because the prompt function has already run for it.
//
// Here the search tool is disabled for good after its second failure.
func Example_keepToolDisabled() {
	agent := func(p *prompt.Prompt) error {
		failures, setFailures := prompt.State(p, "failures", 0)
		locked, setLocked := prompt.State(p, "search_locked", false)
		search := prompt.DefTool(p, "search", "Search the web.",
			func(ctx context.Context, _ struct{}) (string, error) {
				setFailures.Update(ctx, func(n int) int { return n + 1 })
				return "", errors.New("search is down")
			})
		prompt.DefTool(p, "note", "Write a note.",
			func(context.Context, struct{}) (string, error) { return "noted", nil })

		// The decision, applied at every step.
		if locked {
			search.Disable()
		}
		// Made when the failures change: from the next step on through
		// state, at this step directly.
		p.Effect(effects.On(failures), func(ctx context.Context, s *effects.Step) error {
			if failures >= 2 && !locked {
				setLocked.Set(ctx, true)
				search.Disable()
			}
			return nil
		})
		p.User("Find the capital of France.")
		return nil
	}

	model := snapshots.Script(
		snapshots.CallTool("search", nil),
		snapshots.CallTool("search", nil),
		snapshots.CallTool("note", nil),
		snapshots.CallTool("note", nil),
		snapshots.Text("Paris."),
	)
	res, err := runtime.Run(context.Background(), model, agent, runtime.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, req := range model.Requests() {
		var tools []string
		for _, t := range req.Tools {
			tools = append(tools, t.Name)
		}
		fmt.Printf("step %d offers %v\n", i, tools)
	}
	fmt.Println(res.Text)
	// Output:
	// step 0 offers [search note]
	// step 1 offers [search note]
	// step 2 offers [note]
	// step 3 offers [note]
	// step 4 offers [note]
	// Paris.
}
