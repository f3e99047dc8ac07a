package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/evals"
	"github.com/reprompt/reprompt/evals/check"
	"github.com/reprompt/reprompt/examples/internal/agents"
	"github.com/reprompt/reprompt/examples/internal/models"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// The eval of the triage agent (issue 25, item 8): the dataset
// testdata/issues.yaml, 32 issues with the priority a maintainer gave
// each, every case run evalK times.
//
// In CI, and by default, each run replays its recording,
// testdata/recordings/<case>/run-<n>.json, offline. To record again, or
// to run against a model without recording:
//
//	REPROMPT_EVAL=record go test ./examples/structured -run '^TestTriageEval$'
//	REPROMPT_EVAL=live OPENAI_API_KEY=... go test ./examples/structured -run '^TestTriageEval$'
//
// The live model is the environment's (OPENAI_API_KEY or OPENAI_BASE_URL,
// providers/openai), or standIn without one. The committed recordings were
// made with standIn: no real model was reachable when they were made.
// TestTriageEvalMockLLM runs the same eval against @dwmkerr/mock-llm,
// with mistakes of its own.

// evalIssue is a case's input: an issue of the tracker.
type evalIssue struct {
	Number int    `json:"number"`
	Text   string `json:"text"`
}

// evalWant is what a case expects of the answer: its priority only. The
// Triage answered is decoded into it, so the summary and the labels, free
// text the model words its own way, are not compared.
type evalWant struct {
	Priority int `json:"priority"`
}

const (
	evalDataset    = "testdata/issues.yaml"
	evalRecordings = "testdata/recordings"
	evalK          = 3 // runs a case
	evalPassK      = 2 // the k of pass@k and pass^k
)

// triageEval returns the eval of agents.TriageAgent over the dataset, its
// runs' models from models. Besides the priority, each run must read the
// issue it triages, with no tool error, in two steps (read, then answer).
func triageEval(t *testing.T, models evals.ModelFunc) *evals.Eval[evalIssue, evalWant] {
	t.Helper()
	cases, err := evals.Load[evalIssue, evalWant](evalDataset)
	require.NoError(t, err, "load %s", evalDataset)
	require.GreaterOrEqual(t, len(cases), 30, "cases in %s", evalDataset)
	for i := range cases {
		c := &cases[i]
		require.NotNil(t, c.Expected, "case %s: no expected priority", c.Name)
		c.Checks = append(c.Checks, check.Called("read_issue", map[string]any{"number": c.Input.Number}))
	}
	return &evals.Eval[evalIssue, evalWant]{
		Name:  "triage",
		Cases: cases,
		Prompt: func(in evalIssue) prompt.Func {
			return agents.TriageAgent(map[int]string{in.Number: in.Text}, in.Number, "")
		},
		Models:      models,
		Config:      runtime.Config{Name: "triage", OutputMode: llm.OutputTool},
		Checks:      []check.Check{check.NoToolError(), check.MaxSteps(2)},
		K:           evalK,
		PassK:       evalPassK,
		Concurrency: 4,
	}
}

// TestTriageEval runs the eval from its recordings: every case must pass
// at least two of its three runs.
func TestTriageEval(t *testing.T) {
	live := func() (llm.Model, error) {
		m, _ := models.Choose(standIn(), "")
		return m, nil
	}
	e := triageEval(t, evals.Recordings(evalRecordings, live))
	rep := e.Test(t, evals.Threshold{PassAt1: 2.0 / 3})
	if os.Getenv(evals.DatasetEnv) == "" { // else the cases of "reprompt eval run --dataset"
		require.Len(t, rep.Cases, len(e.Cases), "cases reported")
	}
	require.Equal(t, len(rep.Cases)*rep.K, rep.Overall.Runs, "runs measured: each case K times (--k's, if given)")
}

// standIn is a model driven by the request, answering as a model would:
// it reads the issue the user message names, then answers an
// agents.Triage whose priority and labels it infers from the issue's words
// (triageOf). It made the committed recordings.
func standIn() *snapshots.Model {
	return snapshots.Script(
		snapshots.Reply{Func: func(req *llm.Request) snapshots.Reply {
			return snapshots.CallTool("read_issue", agents.IssueArgs{Number: issueNumber(req)})
		}},
		snapshots.Reply{Func: func(req *llm.Request) snapshots.Reply {
			last := req.Messages[len(req.Messages)-1]
			return snapshots.Answer(triageOf(last.Content)).Func(req)
		}},
	)
}

// issueNumber returns the number of the issue the request's first user
// message asks to triage; 0 if none.
func issueNumber(req *llm.Request) int {
	for _, m := range req.Messages {
		var n int
		if _, err := fmt.Sscanf(m.Content, "Triage issue %d.", &n); err == nil {
			return n
		}
	}
	return 0
}

// triageOf is the triage an issue's words suggest, as a reader skimming
// it would give: crashes, corruption and security first, then docs and
// questions, then requests for features, and any other bug second.
func triageOf(text string) agents.Triage {
	lower := strings.ToLower(text)
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(lower, w) {
				return true
			}
		}
		return false
	}
	summary, _, _ := strings.Cut(text, ": ")
	if len(summary) < 20 { // a prefix such as "Docs" or "Question"
		summary = text
	}
	tr := agents.Triage{Summary: summary}
	switch {
	case has("panic", "crash", "corrupt", "security", "data loss", "deadlock", "data race", "out of memory"):
		tr.Priority, tr.Labels = 1, []string{"bug"}
	case has("question:"):
		tr.Priority, tr.Labels = 4, []string{"question"}
	case has("typo", "docs:"):
		tr.Priority, tr.Labels = 4, []string{"docs"}
	case has("feature", "would be nice", "slow", "support for", "option"):
		tr.Priority, tr.Labels = 3, []string{"feature"}
	default:
		tr.Priority, tr.Labels = 2, []string{"bug"}
	}
	return tr
}
