package prompt_test

import (
	"context"
	"fmt"

	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// A sub-agent is a tool that runs a prompt function of its own to
// completion: its own system prompt, state, tools and effects, and the task
// the model gave as its first user message (and as Input). The parent's
// model sees only the sub-agent's final answer.
func ExamplePrompt_DefAgent() {
	researcher := func(p *prompt.Prompt) error {
		p.DefSystem("role", "You research one question and answer in one line.")
		p.Def("task", p.Input())
		return nil
	}
	agent := func(p *prompt.Prompt) error {
		p.DefSystem("role", "You answer questions; delegate research.")
		p.DefAgent("researcher", "Research a question.", researcher)
		p.User("What is the capital of France?")
		return nil
	}

	// One script for both: the parent calls the sub-agent, the sub-agent
	// answers, the parent answers.
	model := snapshots.Script(
		snapshots.CallTool("researcher", prompt.AgentArgs{Task: "capital of France"}),
		snapshots.Text("Paris."),
		snapshots.Text("The capital of France is Paris."),
	)
	res, err := runtime.Run(context.Background(), model, agent, runtime.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("tool result:", res.Steps[0].ToolResults[0].Content)
	sub := model.Requests()[1]
	fmt.Printf("sub-agent request: %q\n", sub.Messages[0].Content)
	fmt.Println("answer:", res.Text)
	// Output:
	// tool result: Paris.
	// sub-agent request: "capital of France"
	// answer: The capital of France is Paris.
}
