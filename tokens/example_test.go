package tokens_test

import (
	"fmt"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/tokens"
)

func ExampleForModel() {
	for _, model := range []string{"gpt-4o-mini", "gpt-4-turbo", "llama3.1:8b"} {
		c := tokens.ForModel(model)
		fmt.Println(model, c.Name(), c.Exact(), c.Text("Hello, world!"))
	}
	// Output:
	// gpt-4o-mini o200k_base true 4
	// gpt-4-turbo cl100k_base true 4
	// llama3.1:8b estimate false 4
}

func ExampleAccountant() {
	acc := tokens.NewAccountant(tokens.ForModel("gpt-4o"))
	transcript := []defs.Message{
		defs.UserMessage("What is 2+2?"),
	}
	fmt.Println(acc.Count(transcript))

	// The next step counts only the two new messages.
	transcript = append(transcript, defs.AssistantMessage("4"), defs.UserMessage("And 3+3?"))
	fmt.Println(acc.Count(transcript))

	// The tokens the request shares with the previous one.
	fmt.Println(acc.Prefix(1))
	// Output:
	// 11
	// 26
	// 11
}

func ExampleHybrid() {
	h := tokens.NewHybrid(tokens.ForModel("qwen2.5-coder")) // an Estimator
	request := []defs.Message{defs.UserMessage("List the files in the repository, please.")}
	fixed := 200 // the system prompt and tool schemas, estimated

	// The provider reported 250 input and 12 output tokens.
	h.Observe(request, fixed, 250, 12)
	fmt.Printf("ratio %.2f\n", h.Ratio())

	transcript := append(request, defs.AssistantMessage("a.go b.go"), defs.UserMessage("Open a.go."))
	fmt.Println("messages", h.Estimate(transcript), "fixed", h.Scale(fixed))
	// Output:
	// ratio 1.16
	// messages 43 fixed 233
}
