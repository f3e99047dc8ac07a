package snapshots_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// lookup is the sub-agent of the example: it searches, then answers.
func lookup(p *prompt.Prompt) error {
	p.DefSystem("role", "You look things up.")
	prompt.DefTool(p, "search", "Search the web.", func(ctx context.Context, a struct {
		Query string `json:"query"`
	}) (string, error) {
		return "Paris is the capital of France.", nil
	})
	return nil
}

// A script gives each sub-agent its replies by the name it was declared
// with; the replies given to Script are the parent's. Each request names the
// agent it is for, and the sub-agent's steps are recorded under the tool
// call that ran it, as in a golden file.
func ExampleModel_Agent() {
	parent := func(p *prompt.Prompt) error {
		p.DefAgent("researcher", "Find facts.", lookup)
		p.User("What is the capital of France?")
		return nil
	}
	model := snapshots.Script(
		snapshots.CallTool("researcher", prompt.AgentArgs{Task: "capital of France"}),
		snapshots.Text("Paris."),
	).Agent("researcher",
		snapshots.CallTool("search", map[string]string{"query": "capital of France"}),
		snapshots.Text("Paris"),
	)
	res, err := runtime.Run(context.Background(), model, parent, runtime.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, req := range model.Requests() {
		fmt.Printf("request for %q, step %d\n", req.Agent, req.Step)
	}
	a := res.Steps[0].Agents[0]
	fmt.Printf("call %s ran %s: %d steps, answer %q\n", a.CallID, a.Name, len(a.Steps), res.Steps[0].ToolResults[0].Content)
	// The golden file's sections, without their bodies:
	for line := range strings.Lines(string(snapshots.Format(res.Steps, nil))) {
		if strings.HasPrefix(line, "-- ") {
			fmt.Print(line)
		}
	}
	// Output:
	// request for "", step 0
	// request for "researcher", step 0
	// request for "researcher", step 1
	// request for "", step 1
	// call call_1 ran researcher: 2 steps, answer "Paris"
	// -- step 0/system --
	// -- step 0/tools --
	// -- step 0/messages --
	// -- step 0/reply --
	// -- step 0/agent researcher call_1/step 0/system --
	// -- step 0/agent researcher call_1/step 0/tools --
	// -- step 0/agent researcher call_1/step 0/messages --
	// -- step 0/agent researcher call_1/step 0/reply --
	// -- step 0/agent researcher call_1/step 0/results --
	// -- step 0/agent researcher call_1/step 0/state --
	// -- step 0/agent researcher call_1/step 1/system --
	// -- step 0/agent researcher call_1/step 1/tools --
	// -- step 0/agent researcher call_1/step 1/messages --
	// -- step 0/agent researcher call_1/step 1/reply --
	// -- step 0/agent researcher call_1/step 1/state --
	// -- step 0/agent researcher call_1/end --
	// -- step 0/results --
	// -- step 0/state --
	// -- step 1/system --
	// -- step 1/tools --
	// -- step 1/messages --
	// -- step 1/reply --
	// -- step 1/state --
	// -- end --
}

// Summary replies answer the summary requests compaction sends
// (llm.PurposeSummary), from a list of their own: they never take a
// reply meant for a step. Here an effect asks for a summary at step 1.
func ExampleSummary() {
	fn := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "work", "Work.", func(context.Context, struct{}) (string, error) { return "worked", nil })
		p.Effect(effects.Always, func(ctx context.Context, s *effects.Step) error {
			if s.Number == 1 {
				text, err := s.Model.Complete(ctx, "Summarise.", "the work so far")
				if err != nil {
					return err
				}
				s.AppendMessages(defs.UserMessage(text))
			}
			return nil
		})
		p.User("Work twice.")
		return nil
	}
	model := snapshots.Script(
		snapshots.CallTool("work", nil),
		snapshots.Summary("One piece of work is done."),
		snapshots.CallTool("work", nil),
		snapshots.Text("Done."),
	)
	res, err := runtime.Run(context.Background(), model, fn, runtime.Config{})
	fmt.Println(len(res.Steps), "steps;", res.Text, err)
	sum := res.Steps[1].Summaries[0]
	fmt.Printf("step 1 asked %q and got %q\n", sum.Request.Messages[0].Content, sum.Reply.Message.Content)
	fmt.Println("script errors:", model.Err())
	// Output:
	// 3 steps; Done. <nil>
	// step 1 asked "the work so far" and got "One piece of work is done."
	// script errors: <nil>
}
