package runtime_test

import (
	"context"
	"fmt"

	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// A tool that needs approval pauses the run; Approve or Deny decide, and
// Run continues it.
func ExampleRunner_Approve() {
	type deleteArgs struct {
		Path string `json:"path"`
	}
	agent := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "delete", "Delete a file.", func(ctx context.Context, a deleteArgs) (string, error) {
			return "deleted " + a.Path, nil
		}, prompt.NeedsApproval())
		p.User("Clean up.")
		return nil
	}
	model := snapshots.Script(
		snapshots.CallTools(
			snapshots.Call{ID: "d1", Name: "delete", Args: deleteArgs{Path: "build/"}},
			snapshots.Call{ID: "d2", Name: "delete", Args: deleteArgs{Path: "src/"}},
		),
		snapshots.Text("Cleaned up build/."),
	)
	r := runtime.New(model, agent, runtime.Config{})
	res, err := r.Run(context.Background())
	if err != nil {
		panic(err)
	}
	for _, c := range res.Awaiting {
		fmt.Printf("awaiting %s: %s %s\n", c.CallID, c.Tool, c.Arguments)
	}
	_ = r.Approve("d1")
	_ = r.Deny("d2", "Keep the sources.")
	res, err = r.Run(context.Background())
	if err != nil {
		panic(err)
	}
	for _, tr := range res.Steps[0].ToolResults {
		fmt.Printf("%s: %s\n", tr.CallID, tr.Content)
	}
	fmt.Println(res.Text)
	// Output:
	// awaiting d1: delete {"path":"build/"}
	// awaiting d2: delete {"path":"src/"}
	// d1: deleted build/
	// d2: Keep the sources.
	// Cleaned up build/.
}
