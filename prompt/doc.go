// Package prompt is what a prompt is written against: the [Prompt] handle
// a prompt function receives, and its hooks.
//
// A prompt function is executed again before every step of a run, the way a
// React component renders again: it declares its definitions, reads its
// state and registers its effects each time.
//
//	func agent(p *prompt.Prompt) error {
//		count, setCount := prompt.State(p, "count", 0)
//		p.DefSystem("role", "You count things.")
//		p.Def("count", strconv.Itoa(count))
//		prompt.DefTool(p, "increment", "Add one to the count.",
//			func(ctx context.Context, _ struct{}) (int, error) {
//				setCount.Update(ctx, func(n int) int { return n + 1 })
//				return count + 1, nil
//			})
//		p.Effect(effects.On(count), func(ctx context.Context, s *effects.Step) error {
//			return nil // runs at step 0 and whenever count changed
//		})
//		p.User("Count to three.")
//		return nil
//	}
//
// Package runtime runs it: runtime.Run(ctx, model, agent, runtime.Config{}).
//
// # Rules of hooks
//
// The methods of [Prompt] and the functions taking one ([State],
// [DefTool]) are hooks. They follow React's rules:
//
//   - call them only while the prompt function executes, on its goroutine:
//     a hook called from a tool or an effect (they run between executions)
//     panics with a [*MisuseError], which the run turns into a [*Error]
//     naming the call site; a goroutine the prompt function starts must not
//     call hooks either (nothing can tell it from the prompt function's
//     own goroutine while the execution is under way);
//   - declare effects and unkeyed messages unconditionally and in the same
//     order at every execution: they are identified by position, as React
//     identifies hooks, never by their place in the source (a checkpoint
//     resumes under a build whose code moved). Give one a key where order
//     or presence changes (effects.Key, [MessageKey]): a changed order is
//     an error naming both call sites (*effects.HookOrderError,
//     [*MessageOrderError]), not a silent mix-up;
//   - a prompt function must be a function of its state and input: no
//     wall-clock time, random numbers or map iteration order in what it
//     declares, or golden files and prompt caching both suffer.
//
// What hooks return may be used at any time: the setter of [State], the
// handles of the Def methods, [GetState].
//
// # State
//
// [State] returns a key's value as of this execution and its setter; the
// initial value is stored only the first time, and the same key anywhere
// (another State call, a sub-agent's parent) shares one value. Values are
// typed: the same key read as another type is a misuse naming both types.
//
// A setter takes the context of the code that calls it, and has one form
// wherever it is used:
//
//	setCount.Update(ctx, f)         // in a tool: the ctx the tool was given
//	setCount.Update(ctx, f)         // in an effect: the ctx the effect was given
//	setCount.Update(p.Context(), f) // in the prompt function
//
// Set and Update apply in call order to the live value: the prompt
// function sees the new value at its next execution, [GetState] at once,
// and a tool or effect closure made during an execution keeps that
// execution's value. Setting state never triggers a step.
//
// A tool call's context carries the call's own transaction (see
// state.Tx): its Set and Update are recorded there and applied when the
// call finishes, in call order among the calls of one reply whatever order
// they finish in, so that a checkpoint holds a tool's result and its state
// changes together or neither (a crash never keeps the change of a call
// whose result was lost); updaters may run more than once and must be
// pure. A goroutine the tool starts changes state with the call's context
// too: its changes join the call's while the call runs and are dropped once
// it has returned. While the calls of a reply run, a setter given a context
// without the call's transaction (context.Background(), an unrelated
// goroutine's) panics with a *state.ContextError rather than write around
// the calls' order; from a tool, that panic ends the run with a
// *prompt.Error naming the setter's call site, as a hook misused from a
// tool does: a programmer's mistake is not fed to the model. A
// sub-agent's prompt function, effects and tools that change its parent's
// state do so in the transaction of the parent's call that runs it.
//
// State is saved with every checkpoint as JSON, so its values must survive
// a JSON round trip. runtime.StateOf reads a value after the run.
//
// # Definitions
//
// A definition is declared again at every execution; one not declared
// again disappears from the next request, and one declared again keeps its
// position. Each Def method returns a defs.Handle, which prints as its tag
// (<name>), through which the prompt function or an effect may disable it
// for this step (a disabled tool the model calls anyway is not run and
// returns an error result) or remind the model of it (named in a
// user-role reminder at the end of this step's request).
//
// A disable lasts one step by design. To keep a tool disabled, keep the
// decision in state and apply it in the prompt function, which runs before
// every step (if locked { search.Disable() }); an effect that decides (it
// runs only when its dependencies change) sets that state and disables the
// tool for the current step too (Example_keepToolDisabled).
//
//   - [Prompt.DefSystem]: a part of the system prompt;
//   - [Prompt.Def], [Prompt.DefData]: variables, rendered in the system
//     prompt's <variables> block (the exact format is in package runtime's
//     documentation, "The system prompt");
//   - [DefTool], [Prompt.DefSchemaTool]: tools (below);
//   - [Prompt.DefAgent]: a sub-agent, offered to the model as a tool that
//     runs another prompt function to completion inside the tool call;
//   - [DefOutput]: the typed answer the run ends with (see package
//     runtime's documentation, "Typed answers").
//
// Messages are not definitions: [Prompt.User] and [Prompt.DefMessage] add a
// message to the transcript the first time they are declared, identified by
// call site (or [MessageKey]) and not by their text, and never again:
// p.User(fmt.Sprintf("Count: %d", count)) adds one message, however often
// count changes. A message that must join later is appended by an effect
// (effects.Step.CommitAppend).
//
// # Tools
//
// [DefTool] derives a tool's JSON Schema from the Go type of its
// arguments (struct fields with json tags; jsonschema tags describe them)
// and validates every call against it before the function runs: arguments
// that do not match give the model an error result ([*ArgumentsError]),
// and the function is not called. The result is encoded as JSON unless it
// is a string. A tool's error, panic or timeout is an error result for the
// model, never the end of the run. Tool names must match
// ^[a-zA-Z0-9_-]{1,64}$ ([*ToolNameError]), and one name declared twice in
// an execution is a [*DuplicateToolError]. [CallID] gives a tool its call's
// id, an idempotency key; [Idempotent] marks a tool safe to run again when
// a run resumes after a crash. [NeedsApproval] and [NeedsApprovalIf] make a
// call wait for a person's decision (see package runtime's documentation,
// "Tool approval").
//
// # Effects
//
// [Prompt.Effect] registers an effect with its dependencies:
// effects.On(values...) runs it when one of the values changed since it
// last ran, effects.Once at the first execution, effects.Always at every
// step. Its memory of the dependencies is kept across steps and
// checkpoints. See package effects for what an effect may change.
//
// # Errors
//
// A prompt function that returns an error, panics or misuses a hook fails
// the step with a [*Error]: its Site names where (for a panic or a misuse),
// and it unwraps to the cause ([*MisuseError] for a misuse). Declaration
// errors are typed: [*ToolNameError], [*DuplicateToolError].
//
// # Testing
//
// A prompt function is tested with package snapshots: a scripted model
// answers its requests and every step's request is compared with a golden
// file, so a change to the prompt shows up as a diff in review.
//
// Package prompt never imports the runtime; the runtime drives a Prompt
// through an internal bridge (internal/promptrt).
package prompt
