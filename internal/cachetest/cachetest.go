// Package cachetest is the short coding agent that the adapters' golden
// tests run to show what each does for a provider's prompt cache: a tool
// the prompt function withdraws for a step and restores, and an effect
// that commits a rewrite of the transcript, so that the request's prefix
// breaks for each reason Step.Cache names.
package cachetest

import (
	"context"
	"strings"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/prompt"
)

// Call is one reply of the script: a tool call, or the final text when
// Tool is "".
type Call struct {
	ID, Tool, Args string
	Text           string
}

// Script is what the model answers at each step of Agent.
var Script = []Call{
	{ID: "call_1", Tool: "read_file", Args: `{"path":"main.go"}`},
	{ID: "call_2", Tool: "run_tests", Args: `{"path":"./..."}`},
	{ID: "call_3", Tool: "read_file", Args: `{"path":"go.mod"}`},
	{ID: "call_4", Tool: "read_file", Args: `{"path":"README.md"}`},
	{Text: "The tests pass."},
}

// Withdrawn is the step at which Agent's prompt function disables
// run_tests (the next step declares it again), and Rewritten the step at
// which its effect replaces the first tool result with a stub.
const (
	Withdrawn = 2
	Rewritten = 4
)

type pathArgs struct {
	Path string `json:"path"`
}

// Agent is the agent: a system prompt, two tools, a user message and an
// effect that trims the first tool result at step Rewritten.
func Agent(p *prompt.Prompt) error {
	p.DefSystem("role", "You fix Go code. Read files, run the tests, and say when they pass.")
	prompt.DefTool(p, "read_file", "Read a file.", func(ctx context.Context, a pathArgs) (string, error) {
		return "contents of " + a.Path + strings.Repeat(" .", 40), nil
	})
	tests := prompt.DefTool(p, "run_tests", "Run the tests of a package.", func(ctx context.Context, a pathArgs) (string, error) {
		return "ok " + a.Path, nil
	})
	if p.Step() == Withdrawn {
		tests.Disable()
	}
	p.Effect(effects.Always, func(ctx context.Context, s *effects.Step) error {
		if s.Number != Rewritten {
			return nil
		}
		msgs := s.CopyTranscript()
		for i, m := range msgs {
			if m.Role == defs.RoleTool {
				msgs[i].Content = "[trimmed: read once]"
				break
			}
		}
		s.CommitMessages(msgs)
		return nil
	}, effects.Key("trim"))
	p.User("The tests fail; fix them.")
	return nil
}
