// Package builtin provides the built-in context-management effects and
// effects read from a configuration file.
//
// Each effect is a constructor taking a config struct whose zero value
// means the documented defaults, and returning an effects.Func to register
// with prompt.Prompt.Effect in the phase its documentation names:
//
//	trim := builtin.TrimToolResults(builtin.TrimConfig{})           // kind trim_tool_results, AfterReply
//	compact := builtin.Compact(builtin.CompactConfig{})             // kind compact, BeforeCall
//	limits := builtin.Limits(builtin.LimitsConfig{MaxCost: 2})      // kind limits, BeforeCall
//	run := func(p *prompt.Prompt) error {
//		p.Effect(effects.Always, compact, effects.Key("compact"), effects.Recovery())
//		p.Effect(effects.Always, limits, effects.Key("limits"))
//		p.Effect(effects.Always, trim, effects.Key("trim"), effects.InPhase(effects.AfterReply))
//		…
//	}
//
// Register Compact with effects.Recovery(), so that it runs again when the
// provider rejects a request as too long, and before effects that add views
// (Limits), since a commit drops the views made before it.
//
// Build the effects once per run, outside the prompt function: they
// remember how far they read the transcript, so that a step where they do
// nothing costs what is new, not the length of the history. Config.Register
// does this for you.
//
// # Prompt-cache discipline
//
// Providers bill a request's cached prefix at a fraction of the price. The
// effects here rewrite earlier messages only by a commit
// (effects.Step.CommitMessages), once, and as rarely as they can:
// TrimToolResults trims in batches (see TrimConfig.Batch), Compact acts only
// above its threshold and then brings the request well under it. What is
// volatile (the wrap-up message of Limits) is a view at the tail of one
// step's request.
//
// The defaults are tuned for prompt caches: a tool result is trimmed once
// the model has answered it, and TrimToolResults declares that rewrite
// beforehand (effects.Step.WillRewrite), so that the runtime sends the part
// before it as the request's committed part (llm.Request.Committed), where
// providers/anthropic places a breakpoint the next request reads; the
// summaries continue the run's cached request (CompactConfig.Continue), so
// that compaction costs little, and starts early, the earlier the dearer
// cached input is (the profile's CachedInputFraction: at 0.3 of the usable
// window up to 0.1, at 0.25 from 0.5 on, later in a window that small
// holds less than DefaultsMinHistory). go run ./examples/longsession
// compares the strategies over a 320-step session; its figures, with the
// command that measures them, are in docs/performance.md.
//
// # Trimming
//
// TrimToolResults cuts the long results of old tool calls after each reply.
// A trimmed message carries Meta[MetaTrimmed] (its original length) and is
// never trimmed again; error results are never cut.
//
// # Compaction
//
// Compact is graduated: it first trims old tool results; if the request is
// still above the threshold it replaces the older messages by one summary,
// written by the model or by a rule-based strategy (truncate, window,
// heuristic). The summary is a user message labelled <summary>…</summary>
// with Meta[MetaSummary], placed right after the first user message (the
// task) or at the start; later compactions update it. Cuts never separate a
// tool call from its result. See Compact for the details and Info for what
// is reported.
//
// # Limits
//
// Limits stops a run at a number of model calls, tokens, a cost or a wall
// time with a *LimitError (errors.Is with ErrIterationLimit, ErrTokenLimit,
// ErrCostLimit, ErrTimeLimit), and asks the model to wrap up before.
//
// # Profiles
//
// ProfileFor gives the context window and output reserve of known models;
// Local gives a small-window profile for local servers. Defaults turns a
// profile into the default effects.
//
// # Configuration
//
// Load and Parse read effects from YAML (kind, params, and a when condition
// in expr-lang over WhenEnv); errors carry file:line:col. Config.Register
// registers them in a prompt, keyed and in their phases, as it does the
// Defaults of a profile:
//
//	var ctxEffects = builtin.Defaults(builtin.ProfileFor("gpt-4o")) // or builtin.Load("effects.yaml")
//
//	func agent(p *prompt.Prompt) error {
//		ctxEffects.Register(p) // trim_tool_results + compact, keyed, in their phases
//		// … definitions, state, effects …
//		return nil
//	}
//
// A file:
//
//	model: gpt-4o
//	effects:
//	  - kind: trim_tool_results
//	    params: {max_result_length: 600, preserve_turns: 1, batch: 1}
//	  - kind: compact
//	    params: {threshold: 0.8, strategy: summarize}
//	  - kind: limits
//	    params: {max_iterations: 40, max_cost: 2.5, max_time: 10m}
//	    when: step > 2
//
// A when condition is bounded, since a configuration file may come from
// elsewhere: Parse rejects conditions of more than WhenMaxNodes nodes or
// with constant ranges of more than WhenMaxRange elements, and each
// evaluation stops at Config.WhenTimeout (DefaultWhenTimeout unless the
// file's when_timeout says otherwise), when the run's context ends, or when
// it builds a string or arrays past WhenMaxString or WhenMemoryBudget. The
// effect then fails with a *WhenError naming the condition's file, line
// and column.
package builtin
