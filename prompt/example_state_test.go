package prompt_test

import (
	"fmt"

	"github.com/reprompt/reprompt/prompt"
)

func ExampleState() {
	p := prompt.New("")
	fn := func(p *prompt.Prompt) error {
		count, setCount := prompt.State(p, "count", 0)
		fmt.Println("execution sees", count)
		setCount.Update(p.Context(), func(n int) int { return n + 1 })
		live, _ := prompt.GetState[int](p.Context(), p, "count")
		fmt.Println("live value", live)
		return nil
	}
	_, _ = p.Execute(0, fn)
	_, _ = p.Execute(1, fn)
	// Output:
	// execution sees 0
	// live value 1
	// execution sees 1
	// live value 2
}
