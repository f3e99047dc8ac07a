package snapshots_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// greeter is the prompt of the examples.
func greeter(p *prompt.Prompt) error {
	name, setName := prompt.State(p, "name", "")
	p.DefSystem("role", "You greet people by name.")
	p.Def("name", name)
	prompt.DefTool(p, "remember", "Remember the user's name.",
		func(ctx context.Context, a struct {
			Name string `json:"name"`
		}) (string, error) {
			setName.Set(ctx, a.Name)
			return "ok", nil
		})
	p.User("I am Ada.")
	return nil
}

// TestExampleRun is how a user snapshots a prompt: one call in a test. The
// first time, create the golden file with
//
//	REPROMPT_UPDATE=1 go test ./snapshots -run '^TestExampleRun$'
//
// and commit testdata/TestExampleRun.txtar; from then on the test fails with
// a diff whenever a step renders differently.
func TestExampleRun(t *testing.T) {
	model := snapshots.Script(
		snapshots.CallTool("remember", map[string]string{"name": "Ada"}),
		snapshots.Text("Hello, Ada!"),
	)
	snapshots.Run(t, greeter, model)
}

// Format renders the steps of a run as a golden file does.
func ExampleFormat() {
	model := snapshots.Script(
		snapshots.CallTool("remember", map[string]string{"name": "Ada"}),
		snapshots.Text("Hello, Ada!"),
	)
	res, err := runtime.Run(context.Background(), model, greeter, runtime.Config{})
	fmt.Print(string(snapshots.Format(res.Steps, err)))
	// Output:
	// reprompt snapshot v1
	// -- step 0/system --
	// <role>
	// You greet people by name.
	// </role>
	//
	// <variables>
	// <name></name>
	// </variables>
	// -- step 0/tools --
	// remember: Remember the user's name.
	//   schema: |
	//     {
	//       "type": "object",
	//       "properties": {
	//         "name": {
	//           "type": "string"
	//         }
	//       },
	//       "required": [
	//         "name"
	//       ],
	//       "additionalProperties": false
	//     }
	// -- step 0/messages --
	// [0] user
	//   content: I am Ada.
	// -- step 0/reply --
	// finish: tool_calls
	// call: call_1 remember {"name":"Ada"}
	// -- step 0/results --
	// call_1 remember {"name":"Ada"}
	//   content: ok
	// -- step 0/state --
	// name: "Ada"
	// -- step 1/cache --
	// prefix broke in <variables>: name changed ("" → Ada)
	// -- step 1/system --
	// <role>
	// You greet people by name.
	// </role>
	//
	// <variables>
	// <name>Ada</name>
	// </variables>
	// -- step 1/tools --
	// remember: Remember the user's name.
	//   schema: (as in step 0)
	// -- step 1/messages --
	// [0] (as in step 0)
	// [1] assistant
	//   call: call_1 remember {"name":"Ada"}
	// [2] tool call_1 remember
	//   content: ok
	// -- step 1/reply --
	// finish: stop
	// content: Hello, Ada!
	// -- step 1/state --
	// name: "Ada"
	// -- end --
	// steps: 2
}

// Record wraps a real model; the recording becomes a scripted model with
// Replay, so that a run seen against the real model can be repeated offline.
func ExampleRecord() {
	real := snapshots.Script( // stands for a provider's model
		snapshots.Reply{
			Calls: []snapshots.Call{{ID: "call_8fQ2", Name: "remember", Args: `{"name": "Ada"}`}},
			Usage: &llm.Usage{InputTokens: 61, OutputTokens: 9},
		},
		snapshots.Reply{Text: "Hello, Ada!", Usage: &llm.Usage{InputTokens: 80, OutputTokens: 4, CachedTokens: 61}},
	)
	rec := snapshots.Record(real)
	if _, err := runtime.Run(context.Background(), rec, greeter, runtime.Config{}); err != nil {
		fmt.Println(err)
		return
	}
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "greeter.json") // in a real test: testdata/...
	if err := rec.WriteFile(path); err != nil {
		fmt.Println(err)
		return
	}
	data, _ := os.ReadFile(path)
	fmt.Print(string(data))

	model, err := snapshots.Replay(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := runtime.Run(context.Background(), model, greeter, runtime.Config{})
	fmt.Println(res.Text, err)
	// Output:
	// {
	//   "version": 1,
	//   "replies": [
	//     {
	//       "calls": [
	//         {
	//           "id": "call_8fQ2",
	//           "name": "remember",
	//           "arguments": "{\"name\": \"Ada\"}"
	//         }
	//       ],
	//       "finish": "tool_calls",
	//       "usage": {
	//         "input_tokens": 61,
	//         "output_tokens": 9
	//       }
	//     },
	//     {
	//       "text": "Hello, Ada!",
	//       "finish": "stop",
	//       "usage": {
	//         "input_tokens": 80,
	//         "output_tokens": 4,
	//         "cached_tokens": 61
	//       }
	//     }
	//   ]
	// }
	// Hello, Ada! <nil>
}
