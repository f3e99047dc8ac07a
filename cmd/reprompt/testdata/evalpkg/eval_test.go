// Package evalpkg is the eval that the tests of reprompt eval run run
// with go test: the triage prompt over four issues, 4 runs a case, on
// scripted models. Variables set by the test change what it does:
// EVALPKG_MISTAKES (the scripted runs make mistakes), EVALPKG_DELAY (a
// run takes that long), EVALPKG_THRESHOLD (every run must pass),
// EVALPKG_PANIC (the first run of the case it names panics).
package evalpkg

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/evals"
	"github.com/reprompt/reprompt/evals/check"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/snapshots"
)

type issue struct {
	Number int    `json:"number"`
	Text   string `json:"text"`
}

type triage struct {
	Priority int    `json:"priority"`
	Label    string `json:"label"`
}

type readArgs struct {
	Number int `json:"number"`
}

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

// mistakes are the scripted runs' mistakes with EVALPKG_MISTAKES, by
// case and run: issue-1 passes 4 of 4 runs, issue-2 2 of 4, issue-3 3 of
// 4, issue-4 none. (1: a wrong priority; 2: no read.)
var mistakes = map[string][]int{
	"issue-2": {0, 1, 0, 1},
	"issue-3": {2},
	"issue-4": {1, 2, 1, 1},
}

func model(in issue, want triage, mistake int) llm.Model {
	read := snapshots.CallTool("read_issue", readArgs{Number: in.Number})
	switch mistake {
	case 1:
		w := want
		w.Priority = want.Priority%4 + 1
		return snapshots.Script(read, snapshots.Answer(w))
	case 2:
		return snapshots.Script(snapshots.Answer(want))
	}
	return snapshots.Script(read, snapshots.Answer(want))
}

func TestTriageEval(t *testing.T) {
	panicAt := os.Getenv("EVALPKG_PANIC") // a case's name: its first run panics
	if live {
		require.Equal(t, "live", os.Getenv(evals.ModeEnv), "the live build's %s", evals.ModeEnv)
	}
	var delay time.Duration
	if d := os.Getenv("EVALPKG_DELAY"); d != "" {
		var err error
		delay, err = time.ParseDuration(d)
		require.NoError(t, err, "EVALPKG_DELAY")
	}
	cases := make([]evals.Case[issue, triage], 4)
	for i := range cases {
		cases[i] = evals.Case[issue, triage]{
			Name:     fmt.Sprintf("issue-%d", i+1),
			Input:    issue{Number: i + 1, Text: fmt.Sprintf("Issue %d: the program crashes.", i+1)},
			Expected: &triage{Priority: i%4 + 1, Label: "bug"},
		}
	}
	e := &evals.Eval[issue, triage]{
		Name:   "triage",
		Cases:  cases,
		Prompt: triageAgent,
		Models: func(name string, run int) (llm.Model, error) {
			if name == panicAt {
				panic("evalpkg: the run panics")
			}
			time.Sleep(delay)
			var in issue
			fmt.Sscanf(name, "issue-%d", &in.Number)
			in.Text = fmt.Sprintf("Issue %d: the program crashes.", in.Number)
			want := triage{Priority: (in.Number-1)%4 + 1, Label: "bug"}
			m := 0
			if ms := mistakes[name]; os.Getenv("EVALPKG_MISTAKES") != "" && run < len(ms) {
				m = ms[run]
			}
			return model(in, want, m), nil
		},
		Checks:      []check.Check{check.Called("read_issue", nil), check.NoToolError()},
		K:           4,
		PassK:       2,
		Concurrency: 1,
	}
	min := evals.Threshold{}
	if os.Getenv("EVALPKG_THRESHOLD") != "" {
		min.PassAt1 = 1
	}
	e.Test(t, min)
}
