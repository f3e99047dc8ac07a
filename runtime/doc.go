// Package runtime drives a prompt function against a model: the step loop.
//
//	res, err := runtime.Run(ctx, model, agent, runtime.Config{MaxSteps: 20})
//	if err != nil { ... }
//	fmt.Println(res.Text)
//	count, err := runtime.StateOf[int](res, "count")
//
// Package runtime has no network code: it consumes the [llm.Model] interface,
// implemented by provider adapters (providers/openai) and by the scripted
// model of package snapshots.
//
// # A step
//
// Every step goes through the same stages, in this order; the code refers
// to them by number.
//
//  1. The prompt function is executed again (see package prompt). Its
//     state is as the previous step left it; the messages it declares for
//     the first time join the transcript.
//  2. Definitions it did not declare again are removed; those it declared
//     are enabled unless an effect disables them.
//  3. The effects due before the call run ([effects.BeforeCall]), in
//     registration order: an effect whose dependencies changed since it
//     last ran, or that asks to run every step. They may change the step:
//     disable or remind definitions, limit tools and system parts, set
//     variables, rewrite or append messages ([effects.Step]).
//  4. Their changes are applied and the request is rendered (the system
//     prompt as described under "The system prompt", the tools in
//     declaration order, the messages) and checked against the rules of
//     the wire format ([llm.RequestError]). A disabled tool is left out of
//     the tools, unless [Config.StableTools] keeps it there (not run if
//     called) so that the cached prefix does not break at the tools. The
//     request's Committed is the part of the transcript before the
//     earliest rewrite the effects declared for their next run
//     ([effects.Step.WillRewrite]; 0 when none declared), and its
//     Repeated how far it repeats the previous request, to that one's end
//     or committed part: where an adapter that places cache breakpoints
//     (providers/anthropic) marks them.
//  5. The request is sent ([llm.Model]); a retryable failure is sent again
//     (Config.Retries), and a request the provider finds too long is sent
//     once more after the recovery effects ([effects.Recovery]) shortened
//     it. The reply is checkpointed as pending.
//  6. The tool calls of the reply run, concurrently when there are several,
//     each bound to its own state transaction; results are appended in
//     call order, and each completed call is checkpointed with its state
//     changes.
//  7. The effects due after the reply run ([effects.AfterReply]), seeing
//     the reply and the tool results; a rewrite of the transcript they
//     commit is checked and kept.
//  8. The step's [Step] record is completed, a checkpoint is saved, and the
//     run ends if the reply called no tool, a stop condition holds
//     (Config.StopWhen, Config.StopTools) or the step limit is reached.
//
// # Three grains
//
// The loop is offered at three grains, as the tool runner of the Anthropic
// SDK is: [Runner.Next] runs one step, [Runner.Run] runs to completion and
// [Runner.All] iterates over the steps with a range-over-func loop. [Run]
// is New followed by Run. A runner that may be abandoned before the end
// should be closed ([Runner.Close]) so that the effects' cleanups run.
//
// # The system prompt
//
// The system prompt is rendered from the enabled definitions, the same way
// at every step, so that an unchanged prompt gives a byte-identical prefix
// that a provider's prompt cache can reuse:
//
//	<role>
//	You add numbers.
//	</role>
//
//	<rules>
//	Answer in one line.
//	</rules>
//
//	<variables>
//	<count>3</count>
//	<notes>
//	first line
//	second line
//	</notes>
//	</variables>
//
// System parts (prompt.Prompt.DefSystem) come first, in declaration order,
// each between an opening and a closing tag named after it, on their own
// lines, with the text's trailing line breaks removed; parts are separated
// by one blank line. Then, after one blank line, a single <variables>
// block holds the variables: those declared (Def, DefData) in declaration
// order, then those an effect set with effects.Step.SetVariable without
// declaring them, in the order set. A variable whose text is one line is
// written on the line of its tags; a longer one between them. A Def's text
// is written as given, a DefData value as YAML of its JSON form (json tags
// and omitempty apply, object keys keep their order), and a value set by
// an effect as its string, or as YAML when it is not a string. Disabled
// definitions, and parts excluded by effects.Step.LimitSystems, are left
// out. The system prompt is empty, and no system message is sent, when
// nothing is enabled.
//
// # Errors
//
// A run ends with an error when a step cannot complete. What failed
// decides the type, which errors.As tells apart:
//
//   - [*prompt.Error]: the prompt function returned an error or panicked,
//     or misused a hook ([*prompt.MisuseError]);
//   - [*effects.Error]: an effect returned an error or panicked (Site names
//     where it was registered);
//   - [*StepError]: the model call, rendering, validation, a checkpoint or
//     a Config.ToolExecutor failed; Op says which ([OpModel], [OpRender],
//     [OpValidate], [OpCheckpoint], [OpTools]), and Err is the cause, a
//     [*llm.ModelError] for a provider's failure;
//   - [*PanicError]: a callback of the run (Config.StopWhen,
//     Config.OnDelta, a model) panicked;
//   - [ErrMaxSteps] (wrapped): the step limit was reached while the model
//     still called tools; [ErrDone]: Next after the end.
//
// A tool's failure is not a run's error: the model receives it as an error
// result (without Go source locations), and the developer finds the Go
// error in [Step].ToolErrors ([*ToolPanicError], [*ToolTimeoutError],
// [*prompt.ArgumentsError] or the tool's own). The step record of a failed
// step is returned with the error, as far as the step got.
//
// # Tokens
//
// With Config.Window (and Config.Counter, tokens.ForModel("gpt-4o") for
// exact counts) every step record carries its input tokens, the tokens it
// shares as a prefix with the previous request (what the provider's prompt
// cache serves) and the estimated billed input; effects read the same
// budget (effects.Budget). A summary asked through Step.Model with
// [effects.Continuer] (when no Config.Summarizer is set) is the run's last
// request continued, and so mostly read from the provider's cache. Every request is checked before it is sent
// (stage 4): a tool call without its result, or a result without its
// call, is a [RequestError], never a 400 from the provider.
//
// # Sessions
//
// With Config.Store and Config.SessionID, a checkpoint is saved after every
// step, after every model reply and after every tool result (see package
// session for what it holds, the stores, and what is safe when two
// processes resume one session). [Resume] continues a session where it
// stopped, in another process if need be: state, transcript and the
// effects' dependency memory (an effect whose dependencies did not change
// does not run again). A step interrupted after the model's reply runs
// only the calls whose results were not saved; a call cut short gets an
// explicit "interrupted" result, unless its tool was declared
// prompt.Idempotent, in which case it runs again. Tool call ids stay unique
// over a resumed run, also when a compaction took earlier calls out of the
// transcript (the ids it retired are kept with the checkpoints, in
// session.Checkpoint.RetiredCallIDs, each written once; see
// [RetiredCallIDsKey]), so prompt.CallID is an idempotency key across
// crashes. go run ./examples/resumable -crash-at 3 stops hard in the
// middle of step 3; the same command again resumes there.
//
// # Typed answers
//
// A run can end with a typed value instead of text. The prompt declares
// the answer's Go type with prompt.DefOutput, as a definition: declared at
// a step, it holds for that step, so a prompt can let the model work with
// its tools first. Its JSON Schema is made from the type as tool
// arguments' are, in the strict form OpenAI's structured outputs take
// (every property required, an optional one admitting null, no other
// property); a type strict mode cannot express (a map, an interface) is an
// error naming the field. [Output] reads the answer from the [Result]:
//
//	type Triage struct {
//		Summary   string `json:"summary"`
//		Priority  int    `json:"priority" jsonschema:"1 (urgent) to 4"`
//		Duplicate *int   `json:"duplicate" jsonschema:"the issue this one repeats, or null"`
//	}
//
//	func triage(p *prompt.Prompt) error {
//		prompt.DefTool(p, "read_issue", "Read an issue.", readIssue)
//		prompt.DefOutput[Triage](p, "triage", "Your triage of the issue.")
//		p.User("Triage issue 42.")
//		return nil
//	}
//
//	res, err := runtime.Run(ctx, model, triage, runtime.Config{})
//	if err != nil {
//		return Triage{}, err // a *runtime.OutputError once the answers stayed invalid
//	}
//	return runtime.Output[Triage](res)
//
// The answer is asked for as a strict response_format (json_schema) from
// models whose profile says they take one (builtin.Profile.StructuredOutput:
// OpenAI's gpt-4o, gpt-4.1, gpt-5, o1, o3, o4-mini; openai.Config.NativeOutput
// overrides it), and otherwise as a final tool
// named after the output, whose arguments are the answer; Config.OutputMode
// forces either. The answer is validated when it arrives; an invalid one is
// sent back to the model with the validation error (Config.OutputRetries
// times, 2 by default), then the run fails with an [*OutputError] holding
// the raw answer and the error, as it does at once when the model refuses.
// go run ./examples/structured (add -native for a response_format) runs an
// issue-triage agent whose first answer is invalid.
//
// # Tool approval
//
// A tool declared with prompt.NeedsApproval (or prompt.NeedsApprovalIf,
// deciding per call from its arguments) waits for a person's decision.
// When the model calls it, the call does not run: the step pauses with the
// call in Step.Awaiting and in the session's checkpoint, and Run returns it
// in Result.Awaiting (not an error). The other calls of the same reply run
// at once. [Runner.Approve] and [Runner.Deny] record a decision
// (checkpointed before they return; they run nothing), and the next Run or
// Next completes the step: approved calls run, denied ones get the reason
// as their error result, all results in call order.
//
//	r := runtime.New(model, payer, runtime.Config{Store: store, SessionID: "bills"})
//	res, err := r.Run(ctx) // returns at the pause: err == nil, res.Awaiting lists the calls
//	for _, call := range res.Awaiting {
//		err = r.Approve(call.CallID) // or r.Deny(call.CallID, "Not this month.")
//	}
//	res, err = r.Run(ctx) // runs the approved calls, gives the denied ones the reason, goes on
//
// With a store, the decision may come from another process: [Resume] finds
// the step paused, [Runner.Awaiting] lists the calls still undecided, and a
// decision made before a crash is kept; an approved call cut short by a
// crash is not run twice (it gets an "interrupted" result, or runs again if
// prompt.Idempotent). An unknown or already-decided call id is an
// [*ApprovalError] ([ErrUnknownCall], [ErrAlreadyDecided]); a Next while
// calls await a decision returns [ErrAwaitingApproval]. Invalid arguments,
// disabled and unknown tools get their error result without asking anyone.
// A sub-agent declared with prompt.NeedsApproval waits for the decision
// before it starts; a sub-agent cannot pause inside its own run, so a call
// needing approval there fails that sub-agent. The tools of an MCP server
// take mcp.NeedsApproval(names...). The checkpoint of a paused step is
// written as format version 2, which an older program refuses rather than
// misreads; every other checkpoint stays version 1. snapshots.Decide
// answers the pauses of a snapshot test. go run ./examples/approval pauses
// and decides offline (-ask asks you; -db pay.db -stop leaves the session
// paused for another run).
//
// # Asking the user
//
// A tool asks the user a question with prompt.Ask[T]: the run pauses as
// for an approval, and [Runner.Awaiting] lists the call with its Question
// and the JSON Schema of T. [Runner.Answer] validates the answer against
// that schema and checkpoints it; the call then runs again from its start,
// and Ask returns the answer (a call may ask several questions, each a
// pause of its own). [Runner.Deny] declines: the model gets the reason as
// the call's result. A question is as durable as an approval: a process
// that resumes the paused session sees it, may answer it, and the run
// completes. A sub-agent's question is answered through its parent's run:
// the parent's call pauses with it, and the sub-agent runs again with the
// answers (a sub-agent still cannot wait for an approval).
//
// # Conversations
//
// A run ends when the model answers without calling a tool; a conversation
// goes on with the user's next message. [Runner.Continue] adds the message
// and runs the turn: the transcript, the state, the effects' memory and the
// definitions carry over, and the prompt function reads its turn with
// prompt.Prompt.Turn (to declare what the turn's question needs). Run on a
// finished runner without a new message returns [ErrDone], with a result
// that still holds the transcript and the last typed answer.
//
//	r := runtime.New(model, chat, runtime.Config{Store: store, SessionID: "chat"})
//	for line := range lines {
//		res, err := r.Continue(ctx, line)
//		...
//		fmt.Println(res.Text)
//	}
//
// Run closes the runner at the end of each turn, as at the end of any run:
// the effects' pending cleanups run then. Their dependency memory is kept,
// so an effect whose dependencies did not change does not run again in the
// next turn: what a Once effect opened and its cleanup closed is gone from
// the second turn on. An effect that holds a resource for a turn depends on
// the turn (effects.On(p.Turn().Number)).
//
// [Runner.Send] adds a message from any goroutine while the run goes on: it
// joins the transcript at the start of the next step (Step.Sent lists it),
// or starts the next turn when the run has finished. A message sent while
// the run is paused for approval or an answer waits until the paused step
// is completed. A message sent is held in memory until the step that takes
// it is checkpointed. Another process steers the run the same way through
// the store: [Post] (or session.Inbox, which the SQLite, PostgreSQL and
// memory stores implement) adds a message that joins at the next step, in
// the order posted; the runner's cursor in the posts is checkpointed with
// the transcript, so after a crash each post joins exactly once.
//
// With a store, a new turn is saved before its first model request: a crash
// inside a turn resumes inside it ([Resume], then Run finishes the turn), a
// process that starts between turns continues from the store alone
// ([Resume], then Continue), and of two processes that continue one session
// at once the second fails with a [*StepError] wrapping a
// *session.ConflictError before it asks its model anything. A new run given
// a session id its store already holds fails with a [*SessionExistsError],
// also before any model request. Step.Turn and the step record say which
// turn a step belongs to; snapshots.Turns makes a golden file of a
// conversation.
//
// # Concurrency
//
// A [Runner] is not safe for concurrent use: one goroutine drives it
// ([Runner.Stats] excepted, for progress reports). The
// tool calls of one reply run concurrently, each on its own goroutine, and
// sub-agents declared with prompt.Prompt.DefAgent run inside them, so a
// [llm.Model] must be safe for concurrent use when the prompt declares
// sub-agents. Callbacks (Config.StopWhen, Config.OnDelta) are called on
// the goroutine that drives the runner, for its own steps: not for those
// of its sub-agents.
//
// # Running tools elsewhere
//
// This is the seam the Temporal integration is built on, and all of it is
// in executor.go: [ToolExecutor], [ToolCalls], [RunTool] with [ToolRun]
// and [ToolOutcome], and [NewAgent].
//
// A [ToolExecutor] (Config.ToolExecutor) takes the tool calls of each reply
// instead: it may run them wherever it likes and report their results and
// state changes in any order; they are recorded in call order all the
// same. With one, with Config.Retries zero (no backoff sleeps) and with
// Config.Now (the clock of Stats.Elapsed), a step starts no goroutine and
// reads no wall clock, which is what running the loop in a Temporal
// workflow needs (module github.com/reprompt/reprompt/temporal).
// [RunTool] runs one call away from its run, by executing the prompt
// function again for the call's step and state.
//
// # Testing
//
// Package snapshots gives a scripted [llm.Model] and golden step files:
// snapshots.Run runs a prompt function against a script and compares every
// step's request with a file under testdata, so a prompt is tested like
// any other code.
//
// # Tracing
//
// With Config.TracerProvider set, a run makes OpenTelemetry spans named and
// attributed by the GenAI semantic conventions:
//
//	invoke_agent {Config.Name}        the run, from the first step to the last
//	  reprompt.step                   one per step
//	    chat {model}                  one per model call (each retry too);
//	                                  reprompt.summary=true for an effect's
//	                                  completion (Step.Model, summaries);
//	                                  gen_ai.output.type=json,
//	                                  reprompt.output.mode and
//	                                  reprompt.output.name for a request
//	                                  of a typed answer
//	    execute_tool {tool}           one per tool call
//	      invoke_agent {agent}        a sub-agent, under the call that ran it
//
// Model calls carry gen_ai.operation.name, gen_ai.provider.name and
// gen_ai.request.model (from an llm.Model that implements llm.ProviderNamer and
// llm.ModelNamer), gen_ai.usage.input_tokens, gen_ai.usage.output_tokens,
// gen_ai.usage.cache_read.input_tokens, gen_ai.response.finish_reasons and
// gen_ai.response.id; tool calls gen_ai.tool.name and gen_ai.tool.call.id;
// the run gen_ai.agent.name, gen_ai.conversation.id (Config.SessionID) and
// the run's usage. Attributes of reprompt's own are under "reprompt.": a
// step span has reprompt.step, reprompt.input_tokens (the runtime's count),
// reprompt.prefix_tokens (shared with the previous request: cacheable),
// reprompt.billed_input, reprompt.disabled, reprompt.reminded,
// reprompt.committed, reprompt.compactions and reprompt.recovered (and,
// for tool approval, reprompt.awaiting, reprompt.approved and
// reprompt.denied: call ids), and an event per effect that ran (reprompt.effect, with its id, site, phase and
// reason), per transcript rewrite (reprompt.commit, or reprompt.compaction
// when the transcript got shorter in tokens) and per retry
// (reprompt.retry). An error sets the status of its spans to Error,
// records the error as an exception event and names its type in
// error.type. Message content (system instructions, messages, tool
// arguments and results, dependency values in effect reasons) is recorded
// only with Config.TraceContent. When the model implements llm.Redactor
// (providers/openai does, with its API key), every text recorded in spans
// and log records (content, span statuses, exception events, errors) goes
// through it first, so a secret that a server echoes in a reply is not
// exported; the run itself, its transcript and its session keep the text as
// it came. The run's span ends when the run does: a runner abandoned
// before its last step leaves it open.
//
// # Logging
//
// With Config.Logger set, a run logs one Info record per step ("step":
// step, input_tokens, prefix_tokens, billed_input, usage, tool_calls,
// effects that ran and why, disabled, reminded, awaiting, approved,
// denied, duration) and one when it
// ends ("run ended": totals); a Warn record per model call retried, per
// compaction ("transcript compacted", with messages and tokens before and
// after) and per request recovered after the provider found it too long;
// an Error record per failed step, with error_type; a Debug record per
// other rewrite of the transcript. A sub-agent's records
// carry its name as agent.
package runtime
