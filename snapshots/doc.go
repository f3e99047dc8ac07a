// Package snapshots is test support for prompts: a scripted model that
// answers from a list of replies and records every request, golden files
// that hold every step of a run, and a recorder that turns a run against a
// real model into a script.
//
// Nothing in the library imports snapshots but package evals and its
// evals/check, test support too (they replay recordings and show failing
// steps as golden files do); tests and examples do.
//
// # Snapshot tests
//
// One call in a test runs a prompt function against a scripted model and
// compares every step with the test's golden file:
//
//	func TestAgent(t *testing.T) {
//		model := snapshots.Script(
//			snapshots.CallTool("add_task", taskArgs{Title: "buy milk"}),
//			snapshots.Text("Done."),
//		)
//		snapshots.Run(t, agent, model)
//	}
//
// The golden file is testdata/<t.Name()>.txtar, relative to the package
// directory; a subtest's file is in a subdirectory named after its parent
// (testdata/TestAgent/empty_list.txtar). Options: Config sets the run's
// runtime.Config, Dir another directory, Redact masks volatile values,
// ExpectError declares a run that must fail, Decide answers the tool calls
// that need a person's approval (prompt.NeedsApproval): the golden file
// then shows the calls a step paused for (step 0/awaiting), the decisions
// and the completion of the step (step 0 decided/…).
//
// # Updating golden files
//
// Golden files are written only on request, through the environment (a
// command-line flag would have to be declared by every test binary that
// imports the package):
//
//	REPROMPT_UPDATE=1 go test ./pkg -run '^TestAgent$'
//
// A mismatch fails the test with a diff (-want +got) of each section that
// differs, and prints that exact command for the failing test. With
// REPROMPT_UPDATE set, Run writes the file instead of comparing, creating it
// (and its directories) if needed.
//
// On CI (the variable CI set, as every CI service does) golden files are
// never written: REPROMPT_UPDATE together with CI fails the test, and a
// missing golden file fails it as well instead of being created. Locally a
// missing file fails the test too, naming the command that creates it. A
// variable counts as set unless it is empty, "0", "false", "no" or "off".
//
// Golden compares any other test output with a golden file by the same
// rules, so that one switch updates every golden file of a module.
//
// CheckUnused, called from TestMain, fails a complete, successful test run
// that left golden files unused (typically after renaming a test):
//
//	func TestMain(m *testing.M) { os.Exit(snapshots.CheckUnused(m)) }
//
// # File format
//
// A golden file is plain text that diffs well in review: a txtar archive
// (golang.org/x/tools/txtar) whose comment is the version line
// "reprompt snapshot v1" and whose files are the sections of each step, then
// an "end" section. A step's sections, in the order things happen:
//
//	step N/resumed   a step a crash cut short after the model's reply and
//	                 runtime.Resume completed: "interrupted: CALL" for each
//	                 call that got an "interrupted" result, or
//	                 "interrupted: (none)"; the sections after it are the
//	                 completion's, after those of the attempt if the file
//	                 has them
//	step N/effects   the effects that ran, both phases: id, phase, file, why
//	step N/summary I the I-th summary an effect asked for (compaction): the
//	                 request's system prompt and user text, then the summary
//	                 or the error
//	step N/disabled  definitions disabled for this step's request (kind:name)
//	step N/reminded  definitions reminded in this step's request
//	step N/cache     why the request's prefix broke before the end of the
//	                 previous request's, in one line (a definition declared,
//	                 changed or removed, a tool withdrawn by an effect, a
//	                 reminder dropped, a commit): only on such steps
//	step N/system    the rendered system prompt, verbatim
//	step N/tools     the active tools: "name: description" and the JSON Schema
//	step N/messages  the request's messages: "[i] role [call id] [name]" and fields
//	step N/reply     the finish reason and the reply's reasoning, text, calls
//	step N/agent NAME CALL/…
//	                 the steps of the sub-agent NAME that the tool call CALL
//	                 ran, each with the sections above, then an end section
//	                 with its step count and error; its "(as in step N)"
//	                 refer to its own steps
//	step N/results   the tool results: "call id, name, arguments" and content
//	step N/state     the state after the step, one key a line, sorted, as JSON
//
// A section with nothing to say (no effect ran, nothing disabled) is left
// out. Fields are written "label: value", or "label: |" followed by the
// lines indented two more spaces when the value has several lines (a value
// or system prompt that ends with a line break ends with an empty line). What the
// previous step already showed is not repeated: a system prompt equal to the
// previous step's is written "(as in step N)", the messages the request
// shares with the previous request as "[0-k] (as in step N)", and a tool
// schema already shown as "schema: (as in step N)". So a prompt-cache prefix
// that breaks shows up as messages written out again. The second step of a
// run, for a sample:
//
//	reprompt snapshot v1
//	… (the sections of step 0)
//	-- step 1/effects --
//	#0 before-call (agent.go): count: 0 → 1
//	-- step 1/system --
//	(as in step 0)
//	-- step 1/tools --
//	add: Add n to the count.
//	  schema: (as in step 0)
//	-- step 1/messages --
//	[0] (as in step 0)
//	[1] assistant
//	  call: call_1 add {"n":1}
//	[2] tool call_1 add
//	  content: added 1
//	-- step 1/reply --
//	finish: stop
//	content: The count is one.
//	-- step 1/state --
//	count: 1
//	-- end --
//	steps: 2
//
// The text is deterministic: no wall-clock time, map keys and state keys
// sorted, tool call ids from the script (call_1, call_2, …), effects named
// by their id and the base name of the file that registered them but no line
// number (so that editing a file does not change every snapshot). Usage is
// left out: the scripted model estimates it from the request's length. A
// line of the content that would read as a section marker ("-- x --") is
// written with a leading backslash. The error a run ended with is the end
// section's "error" field, as its Error method writes it: an error that names
// a source line (a failing effect, a panic) may need a Redact. Format returns this text for steps run by other
// means.
//
// # Sub-agents and summaries
//
// A script can give each sub-agent its own replies, by the name it was
// declared with; the replies given to Script are then the run's own
// prompt's only:
//
//	model := snapshots.Script(
//		snapshots.CallTool("researcher", prompt.AgentArgs{Task: "find X"}),
//		snapshots.Text("X is 42."),
//	).Agent("researcher",
//		snapshots.CallTool("search", searchArgs{Query: "X"}),
//		snapshots.Text("42"),
//	)
//
// The runtime tells the model which agent a request is for
// (llm.Request.Agent). With agent scripts, a sub-agent without one, or
// one whose script ran out, gets a *ScriptError naming it and its step, and
// never a reply meant for another agent. Without any, all agents draw from
// the one list in the order their requests arrive, which suits runs without
// sub-agents.
//
// The summaries compaction asks for (llm.Request.Purpose is
// llm.PurposeSummary) are answered from a list of their own: replies
// made with Summary, wherever they stand in the script. A summary request
// with none left gets a *ScriptError too. Compaction then falls back on a
// summary made by rule, and a failed sub-agent is an error result for its
// parent, so the run may go on: Run fails the test with every script error
// all the same, and Model.Err returns them for tests that call runtime.Run
// themselves. runtime.Config.Summarizer can name another model for
// summaries, a second scripted model for instance.
//
// # Typed answers
//
// A prompt that declares a typed answer (prompt.DefOutput) is answered with
// Answer, which gives the value the way the request asks for it: as the
// reply's text for a response_format (llm.OutputNative), as a call of
// the answer tool otherwise (llm.OutputTool, what the scripted model
// gets unless WithNativeOutput or Config.OutputMode says otherwise). A
// string or json.RawMessage is sent as is, so an invalid answer can be
// scripted, and Refuse scripts a refusal:
//
//	model := snapshots.Script(
//		snapshots.Answer(`{"approved": "yes"}`), // invalid: sent back with the error
//		snapshots.Answer(verdict{Approved: true}),
//	)
//
// The snapshot shows the output each request asks for ("step N/output":
// name, Go type, mode and schema) and the answer taken ("step N/answer").
// A recording keeps how each request asked, and a replay asks the same way.
//
// # Record and replay
//
// Record wraps a real model and records its replies; WriteFile saves them as
// JSON, and Replay loads them as a scripted model that answers the same
// requests the same way (text, reasoning, tool call ids, arguments byte for
// byte, finish reasons, usage, errors), each sub-agent from the replies it
// got and each summary request from the recorded summaries. A run that
// misbehaved against a real model becomes an offline test:
//
//	rec := snapshots.Record(provider)
//	runtime.Run(ctx, rec, agent, cfg)
//	rec.WriteFile("testdata/bug123.json")
//
//	// then, in the test:
//	model, err := snapshots.Replay("testdata/bug123.json")
//	...
//	snapshots.Run(t, agent, model)
package snapshots
