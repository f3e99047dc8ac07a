// Package temporal runs prompt functions as Temporal workflows: durable
// agents that survive the death of the process running them, retry a
// failed model call on another worker, and can be talked to for days.
//
// It is its own Go module (github.com/reprompt/reprompt/temporal), so that
// users of the core do not download the Temporal SDK.
//
// # What runs where
//
// The workflow (WorkflowName) runs the runtime's own step loop,
// runtime.Runner, in workflow code: the prompt function, state, effects,
// rendering, request validation and token accounting. Everything that
// does I/O is an activity, with Temporal's timeouts and retry policies:
//
//   - each model call, and each summary an effect asks for (Purpose
//     llm.PurposeSummary, answered by Agent.Config.Summarizer when set),
//     is an ActivityGenerate, retried by Agent.ModelRetry;
//   - each tool call is an ActivityTool; the calls of one reply are started
//     together, as parallel activities, and their results and state
//     changes are recorded in call order (runtime.ToolExecutor). A call of
//     an unknown or disabled tool is answered in workflow code, without an
//     activity;
//   - a tool declared with prompt.Prompt.DefAgent runs its sub-agent as a
//     child workflow when the worker registers an Agent of the same name
//     (the sub-agent's prompt function, model and configuration: its own
//     Config.MaxSteps bounds it, and it never continues as new); its model
//     and tool calls are activities in turn, and its answer is the tool's
//     result. Its usage is the child's, not added to the parent's as in
//     process. A sub-agent without such an Agent runs inside its tool's
//     activity, to completion, against Agent.Model.
//
// Every worker of a task queue registers the same agents (Register). A
// client starts an agent (Start), sends it a user message (Send, the signal
// SignalMessage), reads its state and last steps (Query, the query
// QueryStatus) and answers its tool approvals (Decide, the update
// UpdateDecide).
//
// # Tool approval
//
// A call of a tool declared prompt.NeedsApproval (or NeedsApprovalIf, when
// it says so) pauses the run as in process (runtime.Runner.Approve): the
// other calls of the reply run, and the workflow waits, with workflow.Await
// and for as long as it takes, until every held call is decided. Meanwhile
// Status.Awaiting lists the calls (step, call id, tool, arguments) and
// messages sent are kept for the step after the paused one. Decide sends
// the update UpdateDecide, whose handler approves or denies the call in
// workflow code; once every call is decided the step completes: approved
// calls run as activities (at most once, unless idempotent), denied ones
// give the model the reason, all results in call order. The update's
// validator refuses a call id that does not await a decision (unknown, or
// decided already) before the update is written to the history, so that a
// wrong id leaves the workflow untouched; Decide returns that refusal as
// the *runtime.ApprovalError it is (ErrUnknownCall, ErrAlreadyDecided).
// The decisions are in the session checkpoint (Pending.Approvals), so a
// pause, and the decisions already made, survive continue-as-new. A
// sub-agent's child workflow cannot pause (its parent waits on one tool
// call): it fails (an application error of type SubAgentApprovalError,
// with the text of the *runtime.SubAgentApprovalError), and the parent's
// call gets the error result it gets in process.
//
// # Tools in activities
//
// An activity may run on another worker than the workflow, and a tool is a
// closure the prompt function makes. So the tool activity executes the
// prompt function again, for the call's step and against the state the
// step's tool calls started from (runtime.RunTool), takes the tool the call
// names from that execution, and runs it. The state keys the tool set come
// back with its result, as JSON values, and the workflow applies them in
// call order. Two consequences:
//
//   - the prompt function must be a function of its state (as the runtime
//     asks anyway), or the activity finds another tool than the workflow
//     declared;
//   - when parallel calls of one reply set the same key, the later call's
//     value replaces the earlier's: each computed its value from the state
//     the step started from, so an updater (Setter.Update) does not compose
//     with an earlier parallel call's change as it does in process. Give
//     such tools a key per item, or let the model call them one at a time.
//
// A tool declared prompt.Idempotent is retried (up to DefaultAttempts
// times); any other runs at most once: when its activity fails (its worker
// died, it timed out) the model gets an error result saying that the call
// was interrupted and not run again, as runtime.Resume does. ToolOptions
// change this per tool. A tool activity heartbeats while the tool runs, so
// the death of its worker is noticed after the heartbeat timeout
// (ToolOptions.Heartbeat, DefaultHeartbeat).
//
// # Determinism
//
// Workflow code must make the same commands when it is replayed from its
// history. The runtime in workflow code starts no goroutine (the tool
// calls go to the executor), never sleeps (Config.Retries is set to zero:
// Temporal retries), renders maps in sorted key order (DefData, state
// snapshots) and names tool calls from the step number. What remains is
// the prompt function's and the effects' own code:
//
//   - wall time: do not read time.Now in a prompt function or effect to
//     decide anything; read it in a tool (an activity), or store it in
//     state from a tool. The run's elapsed time (effects.RunStats.Elapsed,
//     which the max_time of builtin.Limits reads) is safe: in a workflow
//     it is measured with workflow.Now (runtime.Config.Now);
//   - random numbers: draw them in a tool and keep them in state, or seed
//     a generator from state;
//   - map iteration: never let the order of a range over a map reach a
//     definition, a message or a decision; sort the keys (DefData of a map
//     is rendered sorted already);
//   - I/O: only in tools, never in the prompt function or an effect.
//
// Code that runs in workflow code and has a workflow.Context at hand can
// use workflow.Now and workflow.SideEffect, but a prompt function has none:
// the rules above are the portable way. TestReplay replays recorded
// histories (worker.WorkflowReplayer) and fails when the workflow code
// makes other commands.
//
// # Long runs
//
// Every Agent.ContinueAfter steps (DefaultContinueAfter, 50), or earlier
// when the server suggests it, the workflow continues as new, carrying its
// session checkpoint (Checkpoint: the session package's encoding of a
// session.Checkpoint), the messages received and not yet added, and the
// last step records. A workflow's history so stays bounded however long
// the agent runs. An agent whose run ended (a reply without tool calls)
// waits Input.Idle for a message, which continues the run.
//
// # Temporal or a session store
//
// A session store (session/sqlite, session/postgres) makes one process's
// run resumable: after a crash, the same program calls runtime.Resume.
// Nothing schedules the work or restarts it; a tool call cut short is
// answered "interrupted" unless idempotent. Use it for runs inside one
// program. Temporal schedules runs across workers, restarts them on
// another worker when one dies, retries model and tool calls by policy,
// and lets other programs message and query an agent for as long as it
// lives; its price is a Temporal server and deterministic prompt
// functions. The two share the checkpoint format.
package temporal
