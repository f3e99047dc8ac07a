// Package evals measures how good a prompt is over a dataset: every case
// runs K times against a model, each run is checked on its whole trajectory
// (the answer, and how the agent got there: tool calls, state, effects,
// approvals, steps, tokens, cost), and the figures say how often it passes.
// A later run is compared with a saved baseline, case by case, with a
// significance test, so that a regression is named, not guessed.
//
//	e := &evals.Eval[Issue, Triage]{
//		Name:   "triage",
//		Cases:  cases, // evals.Load[Issue, Triage]("testdata/issues.yaml")
//		Prompt: func(in Issue) prompt.Func { return triageAgent(in) },
//		Models: evals.Recordings("testdata/recordings", liveModel),
//		Checks: []check.Check{check.Called("read_issue", map[string]any{"number": 42}), check.MaxSteps(4)},
//		K:      5,
//	}
//	rep, err := e.Run(ctx, file) // the result streamed to file, as JSON
//
// # Datasets
//
// A Case has a typed input, an optional expected output and optional checks
// of its own. Load reads cases from a JSON Lines or a YAML file; in a file,
// a case's checks are CheckSpecs ({"called": "read_issue", "args":
// {"number": 42}}, {"max_steps": 3}, ...). Eval.Prompt builds the prompt
// function under test from a case's input.
//
// # Runs
//
// Each case runs K times; at most Concurrency runs are under way at once.
// A run is runtime.New and Runner.Run with Eval.Config; Eval.Decide answers
// the approvals it pauses for. A scripted model, or a replayed recording,
// answers one run only: Eval.Models gives each run its own. A Budget (tokens,
// cost, time) stops the eval cleanly: no new run starts, the report holds
// what was measured, and Report.Stopped says why.
//
// # Checks
//
// Each run is checked on its trajectory by the checks of package
// evals/check (check.Called, check.MaxSteps, check.Judge, ...; see its
// documentation): the eval's Checks, then the case's Expected (as
// check.OutputEquals, named "expected"), then the case's own. A run that
// ends with an error fails first (check.Completed, the check "run"). A
// failing check says at which step, and the report shows that step as the
// run's golden file would (check.Failure.Golden), so that what went wrong
// reads the way a snapshot test's diff does: a report kept in memory and
// Test's always, a report Run streams to a writer with Eval.Goldens. A
// check.Judge's verdicts are kept in the run's Grades (RunResult), and
// its runs count in the Budget.
//
// # Figures
//
// For each case, and overall (the mean of the cases'), a Report gives
// pass@1 (the share of runs that passed), pass@k with the unbiased estimator
// 1 − C(n−c, k)/C(n, k) (PassAtK), pass^k, the chance that k runs all pass,
// C(c, k)/C(n, k) (PassHatK), for n runs of which c passed and k the
// eval's PassK; and the mean and 95th percentile (nearest rank) of steps,
// uncached input tokens, cache reads, output tokens, cost and latency. Cases
// are reported in dataset order and a case's runs by number, whatever
// the concurrency.
//
// # Results and baselines
//
// Run streams the report to a writer as one JSON object, case by case as
// they complete in dataset order, so that an eval of many cases keeps only
// their figures in memory (and, for the overall 95th percentiles, the
// largest 5 % of each measure's values).
// ReadReport reads it back. Compare compares a later report with a
// baseline, case by case: each case's runs passed and failed, before and
// after, make a 2×2 table tested with Fisher's exact test (two-sided);
// a case whose pass rate fell with p < α (0.05 unless told) is Worse, one
// whose rate rose with p < α is Better, a change with p ≥ α is Unsure.
// With k = 5 runs a side, 5/5 → 0/5 is a regression (p ≈ 0.008) and
// 5/5 → 2/5 is not yet (p ≈ 0.17): run more to tell.
//
// # In go test
//
// Eval.Test runs an eval as a test, a subtest a case, failing the cases
// below a Threshold. Recordings gives the runs recorded models: offline and
// deterministic by default (CI), recorded anew or live against a real
// server when the variable REPROMPT_EVAL says "record" or "live":
//
//	func TestTriageEval(t *testing.T) {
//		e := triageEval(evals.Recordings("testdata/recordings", openaiModel))
//		e.Test(t, evals.Threshold{PassAt1: 0.8})
//	}
//
//	REPROMPT_EVAL=record go test ./triage -run '^TestTriageEval$'  # against the server, recorded
//	go test ./triage                                               # replayed, offline
//
// With REPROMPT_EVAL_OUT (OutEnv) set to a directory, Test also writes each
// eval's result file there, named after the eval (OutPath), for "reprompt
// eval report" to render as a table and an HTML page, and compare with a
// baseline:
//
//	REPROMPT_EVAL_OUT=out go test ./triage -run '^TestTriageEval$'
//	reprompt eval report out/triage.json --baseline testdata/baseline.json -o report.html
//
// "reprompt eval run" does both, with a progress bar: it runs go test with
// OutEnv, and with ProgressEnv, a file Test appends a line to as each run
// ends (Progress); DatasetEnv and KEnv give the evals other cases (a file
// Load reads) and another K:
//
//	reprompt eval run ./triage -run '^TestTriageEval$' --k 10 --baseline testdata/baseline.json
package evals
