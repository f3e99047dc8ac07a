// Package reprompt is a React-style, declarative prompt and effect runtime
// for LLM agents.
//
// A prompt is a Go function that the runtime executes again before every
// step of an agent loop. It declares definitions (variables, system-prompt
// parts, tools, sub-agents, messages), keeps typed state with State hooks,
// and registers effects that run when their dependencies change.
//
// # Packages
//
// Import paths are under github.com/reprompt/reprompt/. One line a
// package, the core from the leaves up (TestPackageMaps checks that this
// list and the README's name every package):
//
//   - state: the typed, JSON-serializable state store behind prompt.State (standard library only)
//   - defs: definitions, their handles and collections, message types (standard library only)
//   - effects: effects: dependency lists, phases, what an effect may change in a step
//   - effects/builtin: trimming, compaction, limits, model profiles, effects from YAML
//   - effects/builtin/internal/compaction: the compaction engine behind builtin.Compact
//   - effects/builtin/internal/transcript: what trimming and compaction share: the Meta keys, a transcript cursor, the trim marker
//   - effects/builtin/internal/trimming: the trimming engine behind builtin.TrimToolResults
//   - effects/builtin/internal/when: the bounded expr-lang when conditions of effect configurations
//   - prompt: the Prompt handle and the hooks a prompt function is written against
//   - llm: the model contract (Model, Request, Reply, usage, pricing, model errors), a leaf
//   - runtime: the step loop, sessions, typed answers, tool approval, tracing
//   - snapshots: test support: scripted models, golden step files, record and replay
//   - evals: a prompt measured over a dataset: k runs a case, pass@k and pass^k, baselines
//   - evals/internal/hotpath: an eval's own work: its scheduler of runs, JSON written by hand, measures in bounded memory
//   - evals/check: the checks of a run's whole trajectory (tool calls, state, steps, cost) and judges
//   - tokens: exact token counts (tiktoken encodings, embedded) and estimates
//   - session: checkpoints, the Store interface, the in-memory store
//   - session/internal/msgcodec: the stored form of a message: its JSON, tool-call arguments kept byte for byte
//   - session/internal/lineage: which stored row is each message of a lineage's transcript, for LoadSteps
//   - session/sqlite: a store in one SQLite file, pure Go
//   - session/postgres: a store in PostgreSQL (pgx)
//   - session/sessiontest: a conformance test for your own Store
//   - session/crashtest: tests that kill a running session and resume it
//   - providers/openai: the model adapter for OpenAI-compatible servers (the only user of go-openai)
//   - providers/anthropic: the model adapter for Anthropic's Messages API, on the official SDK (a nested module)
//   - providers/openai/internal/wire: the adapter's wire: request bodies from cached bytes, one HTTP exchange, replies and streams decoded
//   - mcp: MCP servers' tools and resources as definitions (a nested module)
//   - temporal: prompt functions as Temporal workflows (a nested module)
//   - temporal/examples/agent: a to-do agent as a Temporal workflow
//   - cmd/reprompt: the reprompt command: sessions, show, view (HTML), rewind, eval run and report
//   - examples/quickstart: a to-do agent, printed step by step
//   - examples/longsession: context strategies compared over a long session
//   - examples/longsession/sim: that session's simulated coding agent, which the Anthropic adapter's tests also run
//   - examples/resumable: a run killed and resumed
//   - examples/approval: payments that wait for a person's approval
//   - examples/structured: an agent ending with a typed answer
//   - examples/chat: a terminal chat kept in SQLite: one turn a line, resumed after kill -9
//   - examples/internal/models: the model the examples run on
//   - examples/internal/agents: the examples' agents, each with its offline model and printout: the quickstart's to-do agent, structured's triage, chat's notes
//   - examples/internal/anthropic: the quickstart, structured and chat on Anthropic's API with -tags live (a nested module)
//   - cmd/reprompt/internal/viewer: what cmd/reprompt shows: a run from a store, a golden file or a recording, and its HTML page
//   - cmd/reprompt/internal/showtext: the text of reprompt show: a run's steps or chat log, control characters escaped
//   - cmd/reprompt/internal/evalreport: the HTML page of reprompt eval report: cases × runs, failing checks and their steps, the baseline
//   - internal/steprec: the step record and its golden text: one writer, one parser
//   - internal/browsertest: the step viewer and the eval report in headless Chromium (a nested module)
//   - internal/cachetest: the short agent the adapters' golden files show the prompt cache with
//   - internal/callsite: names the places in user code where hooks were called and panics happened
//   - internal/core: the state of a prompt behind its two faces, prompt (the handle) and runtime
//   - internal/canon: the canonical text of a value, by which effects compare dependencies
//   - internal/stepmods: what effects change in a step, which the runtime applies
//   - internal/httpwait: the providers' retry schedule: backoff, jitter, the delay a server asks for (Retry-After)
//   - internal/modelcaps: which models take a strict response_format
//   - internal/redact: an adapter's API key removed from texts and from a model call's errors, which stay typed
//   - internal/lanes: the adapters' cache lanes: the lane of a request by longest shared prefix, the one to reuse, a rewrite told from a fork
//   - internal/msghash: message hashes for content-keyed token counts
//   - internal/convtest: one 20-turn conversation, run on every store and under SIGKILL, for tests
//   - internal/scenario: the prompts the benchmarks share
//   - internal/mockllm: @dwmkerr/mock-llm (an OpenAI-compatible mock from npm) started for tests, and what every npm mock's start shares
//   - internal/pgtest: the PostgreSQL server of REPROMPT_PG_URL, for tests
//   - internal/skipcheck: CI's check that no test skips unless .ci/allowed-skips says so
//
// The import rules between them are checked by TestImportRules. Each
// concept is explained once, in the documentation of its package; the
// repository's docs directory has guides (the step viewer, Temporal, MCP)
// and the performance figures with the commands that measure them.
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
// effects/builtin, prompt, runtime, session and its stores, tokens) does
// not start with the package's name: its errors reach the caller through a
// run, which names the step. Three kinds of message do start with their
// package's name, because whoever reads them cannot tell where they come
// from otherwise: panics for programmer errors ("effects: Step.Cleanup
// called outside a running effect"), the adapters to outside systems
// ("openai: …", "mcp: …"), and the failures the test helpers report into a
// *testing.T ("snapshots: …"). TestErrorMessages checks the rule.
package reprompt
