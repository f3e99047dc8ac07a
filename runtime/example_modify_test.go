package runtime_test

import (
	"context"
	"fmt"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

func ExampleRun_stepModifications() {
	agent := func(p *prompt.Prompt) error {
		p.DefSystem("role", "You answer.")
		p.User("What time is it?")
		p.Effect(effects.Always, func(_ context.Context, s *effects.Step) error {
			s.SetVariable("now", "12:00")                                      // a view: this step only
			s.AppendMessages(defs.UserMessage("(the clock was just checked)")) // a view too
			return nil
		})
		return nil
	}
	model := snapshots.Script(snapshots.Text("Noon."))
	res, _ := runtime.Run(context.Background(), model, agent, runtime.Config{})
	req := model.Requests()[0]
	fmt.Println(req.System)
	fmt.Println(len(req.Messages), "messages sent,", len(res.Transcript), "in the transcript")
	// Output:
	// <role>
	// You answer.
	// </role>
	//
	// <variables>
	// <now>12:00</now>
	// </variables>
	// 2 messages sent, 2 in the transcript
}
