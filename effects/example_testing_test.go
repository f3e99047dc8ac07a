package effects_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
)

// An effect is a function of a Step, so it can be tested without a run:
// NewStep makes a step over a transcript, and Mods tells what the effect
// changed.
func ExampleNewStep() {
	// keepLast commits the transcript cut to its first message and its
	// last two, when it is longer than that.
	keepLast := func(_ context.Context, s *effects.Step) error {
		msgs := s.Transcript()
		if len(msgs) > 3 {
			s.CommitMessages(append([]defs.Message{msgs[0]}, msgs[len(msgs)-2:]...))
		}
		return nil
	}

	s := effects.NewStep(4, []defs.Message{
		defs.UserMessage("task"),
		defs.AssistantMessage("one"),
		defs.UserMessage("two"),
		defs.AssistantMessage("three"),
		defs.UserMessage("four"),
	})
	if err := keepLast(context.Background(), s); err != nil {
		fmt.Println(err)
		return
	}
	mods := s.Mods()
	var texts []string
	for _, m := range mods.Transcript {
		texts = append(texts, m.Content)
	}
	fmt.Println(mods.Committed, strings.Join(texts, ", "))
	// Output:
	// true task, three, four
}
