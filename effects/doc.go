// Package effects is how a prompt reacts to what happened: an effect is a
// function a prompt function registers with a dependency list, and the
// runtime runs it when its dependencies change, with the step it may
// inspect and change.
//
//	p.Effect(effects.On(count), func(ctx context.Context, s *effects.Step) error {
//		if count == 3 { // runs at step 0 and at each step where count changed
//			s.CommitAppend(defs.UserMessage("That is three: stop counting."))
//		}
//		return nil
//	})
//
// # Dependencies
//
// A dependency list ([Deps]) decides when an effect runs: [On] with values
// runs it the first time and whenever one of the values differs from its
// last run (compared deeply, by value: slices, maps and structs by their
// contents, never by reference; NaN equals NaN); [Once] runs it the first
// time only; [Always] at every step. Dependencies are a named value rather
// than a variadic list because Go cannot tell no list from an empty one.
// Each step record says which effects ran and why ("first run", "every
// step", "count: 1 → 2"); [Named] gives a value the name that step records
// and traces show.
//
// Unkeyed effects are matched from execution to execution by the order in
// which they are registered, so they must be registered unconditionally
// and in the same order; a changed order or count is a [*HookOrderError].
// [Key] identifies an effect by a key instead (in a loop, effects.Key(item)),
// wherever and however often it is registered (two with the same key in one execution are a
// [*DuplicateKeyError]). An effect's memory of its dependencies is kept
// across steps and in checkpoints ([Memory]).
//
// # Phases
//
// An effect runs before the model call ([BeforeCall], the default) or
// after the reply and its tool calls ([AfterReply], chosen with
// [InPhase]). [Recovery] effects run again, out of cadence, when the
// provider rejected the step's request as too long, with
// Step.ContextTooLong set, so that they can shorten it at once.
//
// # What an effect may change
//
// A [Step] changes the request in two kinds of ways. A view changes only
// this step's request: [Step.AppendMessages], [Step.ReplaceMessages],
// [Step.LimitTools], [Step.LimitSystems], [Step.SetVariable], and
// disabling or reminding a definition through its handle (Step.Tools,
// Step.Systems and Step.Variables list them). A commit changes the
// transcript for this step and every later one: [Step.CommitMessages]
// replaces it (compaction, trimming), [Step.CommitAppend] adds to it. Views
// made after the reply are dropped, as the request was already sent; only
// commits take effect there. [Step.Cleanup] registers a function run
// before the effect runs again, when it is no longer registered, or when
// the run ends (effect by effect, in registration order).
//
// An effect that rewrites the transcript declares, with
// [Step.WillRewrite], what its next run may rewrite; the runtime sends the
// part before the earliest declared rewrite as llm.Request.Committed,
// where an adapter whose provider caches only up to breakpoints
// (providers/anthropic) marks the prefix the next request reads.
//
// [Budget] tells an effect the context window and counts tokens the way
// the runtime does; [Step.Tokens] is the request's size as it stands.
// Step.Model asks the run's model (or Config.Summarizer) for a completion;
// when it is a [Continuer] (the run's own model), it can also send one as
// the continuation of the run's request, whose prefix the provider cached.
//
// Package effects/builtin has the effects most agents want, configurable in
// YAML: trimming tool results, graduated compaction, limits.
//
// # Errors
//
// An effect that returns an error or panics ends the run with an
// [*Error] naming the effect, where it was registered and, for a panic,
// where it happened; a cleanup that panics is reported the same way with
// Cleanup set.
//
// # Testing an effect
//
// An effect is a plain function of a [Step]: [NewStep] makes one over a
// transcript, and [Step.Mods] returns what the effect changed, so an
// effect can be unit-tested without a run. A whole prompt with its effects
// is tested with package snapshots.
//
// # Concurrency
//
// Effects run on the goroutine that drives the run, one at a time, in
// registration order; each sees the changes of those before it. A Step is
// valid only during the call of the effect it is passed to.
package effects
