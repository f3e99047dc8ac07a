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
//   - effects: the effects manager (dependency memory, phases, step
//     modifications);
//   - prompt: the Prompt handle and hooks a prompt function is written
//     against;
//   - runtime: the step loop and the Model interface;
//   - snapshots: test support (scripted model, golden step files);
//   - providers/openai: the model adapter for OpenAI-compatible servers.
//
// The import rules between them are checked by TestImportRules.
package reprompt
