package agents

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// Triage is the answer of examples/structured's agent.
type Triage struct {
	Summary  string   `json:"summary" jsonschema:"one sentence"`
	Labels   []string `json:"labels" jsonschema:"from: bug, feature, docs, question"`
	Priority int      `json:"priority" jsonschema:"1 (urgent) to 4 (someday)"`
	// Duplicate is the number of an earlier issue this one repeats, if any.
	Duplicate *int `json:"duplicate" jsonschema:"the number of the issue this one duplicates, or null"`
}

// IssueArgs are the arguments of the read_issue tool.
type IssueArgs struct {
	Number int `json:"number"`
}

// issues stands in for an issue tracker.
var issues = map[int]string{
	41: "Crash when the config file is empty. Stack trace: panic: EOF in config.Load.",
	42: "The program panics on an empty config file (EOF in config.Load). Please fix!",
}

// TriageExample is examples/structured's prompt function: the triage of
// issue 42, which may repeat issue 41.
func TriageExample(p *prompt.Prompt) error {
	return TriageAgent(issues, 42, "Issue 41 may be related.")(p)
}

// TriageAgent returns the prompt function that triages issue number, read
// from tracker with the read_issue tool, and answers a Triage; note, if not
// empty, follows the request in the user message. examples/structured's
// eval builds one a case.
func TriageAgent(tracker map[int]string, number int, note string) prompt.Func {
	return func(p *prompt.Prompt) error {
		p.DefSystem("role", "You triage issues of a Go project. Read the issue and the ones it may repeat, then answer.")
		prompt.DefTool(p, "read_issue", "Read an issue by number.", func(ctx context.Context, a IssueArgs) (string, error) {
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

// TriageScript is what the scripted model answers TriageExample: it reads
// both issues, gives an answer whose priority is a string, then a valid
// one.
func TriageScript() *snapshots.Model {
	return snapshots.Script(
		snapshots.CallTools(
			snapshots.Call{Name: "read_issue", Args: IssueArgs{Number: 42}},
			snapshots.Call{Name: "read_issue", Args: IssueArgs{Number: 41}},
		),
		snapshots.Answer(map[string]any{"summary": "Panic on an empty config file.", "labels": []string{"bug"}, "priority": "high", "duplicate": 41}),
		snapshots.Answer(Triage{Summary: "Panic on an empty config file.", Labels: []string{"bug"}, Priority: 1, Duplicate: new(41)}),
	)
}

// RunTriage runs TriageExample on model with cfg and prints to w each
// step (how the answer was asked for, what was sent back, the tool calls,
// the replies) and the answer; about describes the model in the first
// line.
func RunTriage(ctx context.Context, w io.Writer, model llm.Model, about string, cfg runtime.Config) error {
	fmt.Fprintln(w, "triage on", about)
	res, err := runtime.Run(ctx, model, TriageExample, cfg)
	for _, s := range res.Steps {
		fmt.Fprintf(w, "step %d", s.Number)
		req := s.Request()
		if req != nil && req.Output != nil {
			fmt.Fprintf(w, " (answer %q asked as %s)", req.Output.Name, req.Output.Mode)
		}
		fmt.Fprintln(w)
		if req != nil && s.Number > 0 {
			if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == defs.RoleUser {
				fmt.Fprintf(w, "  sent back: %s\n", firstLine(req.Messages[n-1].Content))
			}
		}
		for _, r := range s.ToolResults {
			fmt.Fprintf(w, "  %s %s → %s\n", r.Name, r.Arguments, firstLine(r.Content))
		}
		if s.Reply != nil && s.Reply.Message.Content != "" {
			fmt.Fprintf(w, "  reply: %s\n", firstLine(s.Reply.Message.Content))
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
	fmt.Fprintf(w, "triage: %s labels=%v priority=%d duplicate=%s\n", t.Summary, t.Labels, t.Priority, dup)
	return nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}
