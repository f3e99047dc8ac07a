package evals_test

import (
	"context"
	"fmt"
	"os"

	"github.com/reprompt/reprompt/evals"
	"github.com/reprompt/reprompt/evals/check"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/snapshots"
)

// An eval of the triage prompt over two cases, three runs each, on
// scripted models: the second case's model answers with a wrong priority
// in its first run.
func ExampleEval_Run() {
	cs := []evals.Case[issue, triage]{
		{Name: "crash", Input: issue{Number: 1, Text: "It crashes."}, Expected: &triage{Priority: 1, Label: "bug"}},
		{Name: "typo", Input: issue{Number: 2, Text: "A typo."}, Expected: &triage{Priority: 4, Label: "docs"}},
	}
	e := &evals.Eval[issue, triage]{
		Name:   "triage",
		Cases:  cs,
		Prompt: triageAgent,
		Models: func(name string, run int) (llm.Model, error) {
			in, want := cs[0].Input, *cs[0].Expected
			if name == "typo" {
				in, want = cs[1].Input, *cs[1].Expected
				if run == 0 {
					want.Priority = 2 // the mistake
				}
			}
			return snapshots.Script(snapshots.CallTool("read_issue", readArgs{Number: in.Number}), snapshots.Answer(want)), nil
		},
		Checks: []check.Check{check.Called("read_issue", nil), check.MaxSteps(2)},
		K:      3,
		PassK:  2,
	}
	rep, err := e.Run(context.Background(), nil)
	if err != nil {
		panic(err)
	}
	for _, c := range rep.Cases {
		f := c.Figures
		fmt.Printf("%s: %d/%d passed, pass@1 %.2f, pass@2 %.2f, pass^2 %.2f\n", c.Name, f.Passed, f.Runs, f.PassAt1, f.PassAtK, f.PassHatK)
		for _, r := range c.Runs {
			for _, fl := range r.Failures {
				fmt.Printf("  run %d: %s: %s\n", r.Run, fl.Check, fl.Error())
			}
		}
	}
	// Output:
	// crash: 3/3 passed, pass@1 1.00, pass@2 1.00, pass^2 1.00
	// typo: 2/3 passed, pass@1 0.67, pass@2 1.00, pass^2 0.33
	//   run 0: expected: step 1: answer {"priority":2,"label":"docs"}, want {"priority":4,"label":"docs"}
}

// pass@k and pass^k of 10 runs, 6 of which passed.
func ExamplePassAtK() {
	fmt.Printf("pass@1 %.3f pass@3 %.3f pass^3 %.3f\n", evals.PassAtK(10, 6, 1), evals.PassAtK(10, 6, 3), evals.PassHatK(10, 6, 3))
	// Output: pass@1 0.600 pass@3 0.967 pass^3 0.167
}

// A later run compared with a baseline: 5 runs a case, Fisher's exact
// test at α = 0.05.
func ExampleCompare() {
	caseOf := func(name string, passed int) evals.CaseResult {
		return evals.CaseResult{Name: name, Figures: evals.Figures{Runs: 5, Passed: passed}}
	}
	base := &evals.Report{Cases: []evals.CaseResult{caseOf("refund", 5), caseOf("cancel", 5), caseOf("upgrade", 1)}}
	now := &evals.Report{Cases: []evals.CaseResult{caseOf("refund", 0), caseOf("cancel", 3), caseOf("upgrade", 1)}}
	evals.Compare(base, now, 0).WriteText(os.Stdout)
	// Output:
	// worse refund: 5/5 → 0/5 (Fisher p=0.008, α=0.05)
	// unsure cancel: 5/5 → 3/5 (Fisher p=0.444, α=0.05)
}
