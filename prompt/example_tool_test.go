package prompt_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/prompt"
)

func ExampleDefTool() {
	type weatherArgs struct {
		City  string `json:"city" jsonschema:"the city to look up"`
		Units string `json:"units,omitempty" jsonschema:"celsius or fahrenheit"`
	}
	p := prompt.New("")
	_, _ = p.Execute(0, func(p *prompt.Prompt) error {
		weather := prompt.DefTool(p, "weather", "Current weather.", func(_ context.Context, a weatherArgs) (string, error) {
			return "sunny in " + a.City, nil
		})
		p.User(fmt.Sprintf("Use %s before answering.", weather))
		return nil
	})
	d, _ := p.Registry().Lookup(defs.KindTool, "weather")
	fmt.Println(string(d.Tool.Schema))
	fmt.Println(d.Tool.Validate(json.RawMessage(`{"units":"celsius"}`)) != nil)
	out, _ := d.Tool.Call(context.Background(), json.RawMessage(`{"city":"Oslo"}`))
	fmt.Println(out)
	// Output:
	// {"type":"object","properties":{"city":{"type":"string","description":"the city to look up"},"units":{"type":"string","description":"celsius or fahrenheit"}},"required":["city"],"additionalProperties":false}
	// true
	// sunny in Oslo
}
