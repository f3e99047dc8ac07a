// Package agents holds the agents of the examples, each with the model it
// runs on offline and the loop that prints its run: the quickstart's to-do
// agent (Todo), examples/structured's triage, which ends with a typed
// answer (TriageExample, TriageAgent), and examples/chat's notes, a
// conversation kept in a session store, one turn a line (Chat, EchoModel,
// RunChat). Each example's main package picks the model (and the chat's
// store) and runs its agent; so does examples/internal/anthropic, a
// module of its own that runs them on Anthropic's API (the root module
// does not require the Anthropic adapter).
//
// The package links no network code and no store driver: the quickstart's
// offline build imports it (examples/quickstart's TestOfflineBuildStaysLight).
package agents
