package runtime_test

import (
	"context"
	"fmt"

	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// A run that ends with a typed value: the prompt declares the answer's Go
// type with prompt.DefOutput, and runtime.Output decodes it from the
// result. The first answer lacks a required field: it is sent back to the
// model with the validation error, and the second is taken.
func ExampleOutput() {
	type Invoice struct {
		Number string  `json:"number"`
		Total  float64 `json:"total" jsonschema:"the total in euros"`
	}
	agent := func(p *prompt.Prompt) error {
		prompt.DefOutput[Invoice](p, "invoice", "The invoice's number and total.")
		p.User("Invoice 2026-17: 3 hours at 80 euros.")
		return nil
	}
	model := snapshots.Script(
		snapshots.Answer(map[string]any{"number": "2026-17"}),
		snapshots.Answer(Invoice{Number: "2026-17", Total: 240}),
	)
	res, err := runtime.Run(context.Background(), model, agent, runtime.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	inv, err := runtime.Output[Invoice](res)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d steps, asked with %s: %+v\n", len(res.Steps), res.Steps[0].Request().Output.Mode, inv)
	fmt.Println(res.Steps[0].ToolResults[0].Content)
	// Output:
	// 2 steps, asked with tool: {Number:2026-17 Total:240}
	// error: the answer does not match the schema of "invoice": validating root: required: missing properties: ["total"]. Call invoice again with a valid answer.
}
