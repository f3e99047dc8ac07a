// Package reprompt is a React-style, declarative prompt and effect runtime
// for LLM agents.
//
// A prompt is a Go function that the runtime executes again before every
// step of an agent loop. It declares definitions (variables, system-prompt
// parts, tools, sub-agents, messages), keeps typed state with State hooks,
// and registers effects that run when their dependencies change.
//
// The packages, from the leaves up:
//
//   - state: the typed, serializable state store;
//   - defs: definitions, their handles and collections, message types;
//   - llm: the model contract (Model, Request, Reply, Usage, ModelError)
//     that providers implement and the runtime consumes;
//   - effects: the effects manager (dependency memory, phases, step
//     modifications);
//   - prompt: the Prompt handle and hooks a prompt function is written
//     against;
//   - runtime: the step loop, which drives an llm.Model;
//   - snapshots: test support (scripted model, golden step files);
//   - providers/openai: the model adapter for OpenAI-compatible servers.
//
// The import rules between them are checked by TestImportRules.
//
// # Errors
//
// Callers branch on sentinel errors with [errors.Is] (runtime.ErrMaxSteps,
// session.ErrNotFound) and inspect typed errors with [errors.As] and their
// fields (runtime.StepError's Step and Op, prompt.Error's Site): fields are
// the contract, messages are for people.
//
// One rule shapes every message: it says what failed, then why, in lower
// case without final punctuation, as in "step 3: model: …", "tool "search"
// panicked at tools.go:12: …" or "effect e1 (registered at agent.go:30)
// failed at step 2: …". A core package's message (state, defs, effects,
// effects/builtin, llm, prompt, runtime, session and its stores, tokens) does
// not start with the package's name: its errors reach the caller through a
// run, which names the step. Three kinds of message do start with their
// package's name, because whoever reads them cannot tell where they come
// from otherwise: panics for programmer errors ("effects: Step.Cleanup
// called outside a running effect"), the adapters to outside systems
// ("openai: …", "mcp: …"), and the failures the test helpers report into a
// *testing.T ("snapshots: …"). TestErrorMessages checks the rule.
package reprompt
