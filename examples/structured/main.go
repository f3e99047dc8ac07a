// Command structured runs an issue-triage agent that ends with a typed
// value instead of text: it reads an issue with a tool, then answers with a
// Triage, whose JSON Schema is made from the Go type. The first answer is
// invalid (a priority that is not a number): the runtime sends the
// validation error back and the model answers again.
//
//	go run ./examples/structured            # the answer as a tool call (any model that calls tools)
//	go run ./examples/structured -native    # the answer as a strict response_format
//
// Built with -tags live, it runs on a real model when OPENAI_API_KEY or
// OPENAI_BASE_URL is set; the model's profile then decides how the answer
// is asked for unless -native or -tool is given.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// Triage is the agent's answer.
type Triage struct {
	Summary  string   `json:"summary" jsonschema:"one sentence"`
	Labels   []string `json:"labels" jsonschema:"from: bug, feature, docs, question"`
	Priority int      `json:"priority" jsonschema:"1 (urgent) to 4 (someday)"`
	// Duplicate is the number of an earlier issue this one repeats, if any.
	Duplicate *int `json:"duplicate" jsonschema:"the number of the issue this one duplicates, or null"`
}

type issueArgs struct {
	Number int `json:"number"`
}

// issues stands in for an issue tracker.
var issues = map[int]string{
	41: "Crash when the config file is empty. Stack trace: panic: EOF in config.Load.",
	42: "The program panics on an empty config file (EOF in config.Load). Please fix!",
}

// Agent is the prompt function: the triage of issue 42, which may repeat
// issue 41.
func Agent(p *prompt.Prompt) error {
	return TriageAgent(issues, 42, "Issue 41 may be related.")(p)
}

// TriageAgent returns the prompt function that triages issue number, read
// from tracker with the read_issue tool; note, if not empty, follows the
// request in the user message. The eval (eval_test.go) builds one a case.
func TriageAgent(tracker map[int]string, number int, note string) prompt.Func {
	return func(p *prompt.Prompt) error {
		p.DefSystem("role", "You triage issues of a Go project. Read the issue and the ones it may repeat, then answer.")
		prompt.DefTool(p, "read_issue", "Read an issue by number.", func(ctx context.Context, a issueArgs) (string, error) {
			text, ok := tracker[a.Number]
			if !ok {
				return "", fmt.Errorf("no issue %d", a.Number)
			}
			return text, nil
		})
		prompt.DefOutput[Triage](p, "triage", "Your triage of the issue.")
		user := fmt.Sprintf("Triage issue %d.", number)
		if note != "" {
			user += " " + note
		}
		p.User(user)
		return nil
	}
}

// Script is what the scripted model answers: it reads both issues, gives
// an answer whose priority is a string, then a valid one.
func Script() *snapshots.Model {
	return snapshots.Script(
		snapshots.CallTools(
			snapshots.Call{Name: "read_issue", Args: issueArgs{Number: 42}},
			snapshots.Call{Name: "read_issue", Args: issueArgs{Number: 41}},
		),
		snapshots.Answer(map[string]any{"summary": "Panic on an empty config file.", "labels": []string{"bug"}, "priority": "high", "duplicate": 41}),
		snapshots.Answer(Triage{Summary: "Panic on an empty config file.", Labels: []string{"bug"}, Priority: 1, Duplicate: new(41)}),
	)
}

func main() {
	native := flag.Bool("native", false, "ask for the answer as a strict response_format")
	tool := flag.Bool("tool", false, "ask for the answer with an answer tool")
	flag.Parse()
	cfg := runtime.Config{Name: "triage"}
	switch {
	case *native:
		cfg.OutputMode = llm.OutputNative
	case *tool:
		cfg.OutputMode = llm.OutputTool
	}
	model, about := pickModel(Script())
	fmt.Println("triage on", about)
	if err := run(context.Background(), model, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "structured:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, model llm.Model, cfg runtime.Config) error {
	res, err := runtime.Run(ctx, model, Agent, cfg)
	for _, s := range res.Steps {
		fmt.Printf("step %d", s.Number)
		req := s.Request()
		if req != nil && req.Output != nil {
			fmt.Printf(" (answer %q asked as %s)", req.Output.Name, req.Output.Mode)
		}
		fmt.Println()
		if req != nil && s.Number > 0 {
			if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == defs.RoleUser {
				fmt.Printf("  sent back: %s\n", firstLine(req.Messages[n-1].Content))
			}
		}
		for _, r := range s.ToolResults {
			fmt.Printf("  %s %s → %s\n", r.Name, r.Arguments, firstLine(r.Content))
		}
		if s.Reply != nil && s.Reply.Message.Content != "" {
			fmt.Printf("  reply: %s\n", firstLine(s.Reply.Message.Content))
		}
	}
	if err != nil {
		return err
	}
	t, err := runtime.Output[Triage](res)
	if err != nil {
		return err
	}
	dup := "none"
	if t.Duplicate != nil {
		dup = fmt.Sprintf("#%d", *t.Duplicate)
	}
	fmt.Printf("triage: %s labels=%v priority=%d duplicate=%s\n", t.Summary, t.Labels, t.Priority, dup)
	return nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}
