package evals_test

import (
	"context"
	"fmt"

	"github.com/reprompt/reprompt/evals"
	"github.com/reprompt/reprompt/evals/check"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/snapshots"
)

// issue is the input of the triage prompt under test.
type issue struct {
	Number int    `json:"number"`
	Text   string `json:"text"`
}

// triage is its typed answer.
type triage struct {
	Priority int    `json:"priority" jsonschema:"1 (urgent) to 4"`
	Label    string `json:"label"`
}

type readArgs struct {
	Number int `json:"number"`
}

// triageAgent reads the issue with a tool and answers with a triage.
func triageAgent(in issue) prompt.Func {
	return func(p *prompt.Prompt) error {
		p.DefSystem("role", "You triage issues.")
		prompt.DefTool(p, "read_issue", "Read an issue by number.", func(ctx context.Context, a readArgs) (string, error) {
			if a.Number != in.Number {
				return "", fmt.Errorf("no issue %d", a.Number)
			}
			return in.Text, nil
		})
		prompt.DefOutput[triage](p, "triage", "Your triage.")
		p.User(fmt.Sprintf("Triage issue %d.", in.Number))
		return nil
	}
}

// mistake is what a scripted run gets wrong.
type mistake int

const (
	right         mistake = iota
	wrongPriority         // answers with another priority
	noRead                // answers without reading the issue
	badRead               // reads another issue (a tool error), then answers right
)

// script is the scripted model of one run of the case whose input is in
// and expected answer want, making mistake m.
func script(in issue, want triage, m mistake) *snapshots.Model {
	read := snapshots.CallTool("read_issue", readArgs{Number: in.Number})
	switch m {
	case wrongPriority:
		w := want
		w.Priority = want.Priority%4 + 1
		return snapshots.Script(read, snapshots.Answer(w))
	case noRead:
		return snapshots.Script(snapshots.Answer(want))
	case badRead:
		return snapshots.Script(snapshots.CallTool("read_issue", readArgs{Number: in.Number + 1000}), read, snapshots.Answer(want))
	}
	return snapshots.Script(read, snapshots.Answer(want))
}

// scripted returns the eval's Models: each run of each case gets the
// script of its mistake (right when mistakes does not name it).
func scripted(cases []evals.Case[issue, triage], mistakes map[string][]mistake) evals.ModelFunc {
	byName := map[string]evals.Case[issue, triage]{}
	for _, c := range cases {
		byName[c.Name] = c
	}
	return func(name string, run int) (llm.Model, error) {
		c := byName[name]
		m := right
		if ms := mistakes[name]; run < len(ms) {
			m = ms[run]
		}
		return script(c.Input, *c.Expected, m), nil
	}
}

func cases(n int) []evals.Case[issue, triage] {
	out := make([]evals.Case[issue, triage], n)
	for i := range out {
		out[i] = evals.Case[issue, triage]{
			Name:     fmt.Sprintf("issue-%d", i+1),
			Input:    issue{Number: i + 1, Text: fmt.Sprintf("Issue %d: the program crashes.", i+1)},
			Expected: &triage{Priority: i%4 + 1, Label: "bug"},
		}
	}
	return out
}

type snapshotsModel = snapshots.Model

// judgeScript is a judge's scripted model, answering v.
func judgeScript(v check.Verdict) *snapshots.Model { return snapshots.Script(snapshots.Answer(v)) }
