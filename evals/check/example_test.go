package check_test

import (
	"context"
	"fmt"

	"github.com/reprompt/reprompt/evals/check"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// Checks made of one run, without an eval: the run answers without
// reading the issue it was asked about.
func ExampleApply() {
	agent := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "read_issue", "Read an issue.", func(ctx context.Context, a readArgs) (string, error) {
			return "It crashes.", nil
		})
		p.User("Label issue 7.")
		return nil
	}
	ctx := context.Background()
	res, err := runtime.Run(ctx, snapshots.Script(snapshots.Text("A bug.")), agent, runtime.Config{})
	tr := &check.Trajectory{Case: "issue-7", Result: res, Err: err}
	for _, c := range []check.Check{check.Completed(), check.Called("read_issue", map[string]any{"number": 7}), check.MaxSteps(2)} {
		if f := check.Apply(ctx, c, tr); f != nil {
			fmt.Printf("%s: %s\n", f.Check, f.Error())
		}
	}
	// Output:
	// called read_issue {"number":7}: step 0: read_issue {"number":7} was never called: no tool was
}
