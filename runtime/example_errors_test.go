package runtime_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// A run's error is typed by what failed: errors.As tells a model failure
// (a *StepError with Op OpModel, wrapping a *ModelError) from the step
// limit (ErrMaxSteps) and from the prompt's own failures (*prompt.Error).
func ExampleStepError() {
	agent := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "search", "Search.", func(context.Context, struct{}) (string, error) {
			return "nothing found", nil
		})
		p.User("Find it.")
		return nil
	}
	runs := []llm.Model{
		snapshots.Script(snapshots.Fail(&llm.ModelError{StatusCode: 503, Retryable: true, Message: "overloaded"})),
		snapshots.Script(snapshots.CallTool("search", nil), snapshots.CallTool("search", nil)),
	}
	for _, model := range runs {
		_, err := runtime.Run(context.Background(), model, agent, runtime.Config{MaxSteps: 2})
		var se *runtime.StepError
		var me *llm.ModelError
		switch {
		case errors.As(err, &se) && se.Op == runtime.OpModel && errors.As(err, &me):
			fmt.Printf("step %d: the model failed with status %d (retryable: %t)\n", se.Step, me.StatusCode, me.Retryable)
		case errors.Is(err, runtime.ErrMaxSteps):
			fmt.Println("the step limit was reached")
		}
	}
	// Output:
	// step 0: the model failed with status 503 (retryable: true)
	// the step limit was reached
}
