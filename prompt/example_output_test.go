package prompt_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// DefOutput makes the answer's JSON Schema from a Go type, in strict form:
// every property required, the optional Note admitting null, no other
// property allowed. An answer without Note is valid all the same.
func ExampleDefOutput() {
	type Verdict struct {
		Approved bool   `json:"approved"`
		Note     string `json:"note,omitempty" jsonschema:"why, if not approved"`
	}
	agent := func(p *prompt.Prompt) error {
		prompt.DefOutput[Verdict](p, "verdict", "Your verdict.")
		p.User("Can this change be merged?")
		return nil
	}
	model := snapshots.Script(snapshots.Answer(Verdict{Approved: true}))
	res, err := runtime.Run(context.Background(), model, agent, runtime.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	var schema bytes.Buffer
	json.Indent(&schema, res.Steps[0].Request().Output.Schema, "", "  ")
	fmt.Println(schema.String())
	v, err := runtime.Output[Verdict](res)
	fmt.Printf("%+v %v\n", v, err)
	// Output:
	// {
	//   "type": "object",
	//   "properties": {
	//     "approved": {
	//       "type": "boolean"
	//     },
	//     "note": {
	//       "type": [
	//         "string",
	//         "null"
	//       ],
	//       "description": "why, if not approved"
	//     }
	//   },
	//   "required": [
	//     "approved",
	//     "note"
	//   ],
	//   "additionalProperties": false
	// }
	// {Approved:true Note:} <nil>
}
