// Package check judges one run of a prompt on its whole trajectory: the
// answer, and how the agent got there (tool calls, state, effects,
// approvals, steps, tokens, cost). Package evals makes these checks of
// every run of a dataset; they also work alone, on any runtime.Result.
//
//	e.Checks = []check.Check{
//		check.Called("read_issue", map[string]any{"number": 42}),
//		check.NotCalled("delete_issue", nil),
//		check.MaxSteps(4),
//		&check.Judge{Rubric: "The label fits the issue.", Model: judgeModel},
//	}
//
// # Checks
//
// A Check sees the run as a Trajectory: every step's record (runtime.Step),
// the result and the error. The checks of this package: OutputEquals and
// OutputSatisfies (the typed answer, runtime.Output), Called and NotCalled
// (with arguments matching a pattern, see Matches), CalledInOrder,
// EffectRan, StateEquals, MaxSteps, MaxTokens, MaxCost, NoToolError,
// ApprovalAsked, and Completed (the run ended without an error, the check
// "run" that an eval makes of every run); CheckFunc makes any function one.
//
// A failing check says at which step, and Apply, which makes a check of a
// trajectory, shows that step as the run's golden file would
// (snapshots.Format): Failure.Golden holds its sections, "-- step 2/reply
// --" and the rest, so that what went wrong reads the way a snapshot
// test's diff does.
//
// # Judges
//
// A Judge is a check that asks a model (any llm.Model, typically another
// one) to grade the answer, or the whole transcript, against a rubric. The
// judge is a prompt run by the runtime like any other, ending with a typed
// Verdict (score 1 to 5 and a reason) through prompt.DefOutput and
// runtime.Output; its Grade is kept in the Trajectory (Trajectory.Grades),
// and an eval's report keeps it with the run. Give it recordings of its own
// (evals.Recordings) and it replays offline too.
package check
