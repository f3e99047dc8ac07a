package runtime

import (
	"encoding/json"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/session"
)

// DefaultMaxSteps is the step limit when Config.MaxSteps is zero.
const DefaultMaxSteps = 100

// Config configures a run. The zero Config is valid: at most
// DefaultMaxSteps steps, no other stop condition, no context window, tokens
// estimated at four characters a token.
type Config struct {
	// MaxSteps is the most steps (model calls) a run makes; in a
	// conversation, the most each turn makes (Runner.Continue), counted
	// from the turn's first step also after Resume. Zero means
	// DefaultMaxSteps; a negative value means no limit. Reaching it while
	// the model still calls tools ends the run with an error wrapping
	// ErrMaxSteps. No other stop condition overrides it, and it overrides
	// none.
	MaxSteps int
	// StopWhen, if set, is called after every step of the run (not of its
	// sub-agents, which run inside tool calls); returning true ends the run
	// normally.
	StopWhen func(last *Step) bool
	// StopTools names tools that end the run once one of them ran without
	// error; the model is not called again.
	StopTools []string
	// OnDelta, if set and the model is an llm.StreamingModel, receives the reply
	// as it streams.
	OnDelta func(llm.Delta)
	// AgentMaxSteps is the step limit of sub-agents. Zero means MaxSteps.
	AgentMaxSteps int
	// Summarizer, if set, answers the completions effects ask for through
	// effects.Step.Model (compaction's summaries) instead of the run's
	// model, for sub-agents too. Its requests have Purpose llm.PurposeSummary;
	// each is recorded in Step.Summaries, and none is streamed to OnDelta.
	// Its usage counts in the run's usage and cost (at Pricing). Nil means
	// the run's model.
	Summarizer llm.Model

	// Window is the model's context window in tokens and Reserve the part
	// kept for its output; effects see them in Step.Budget. Zero means
	// unknown.
	Window, Reserve int
	// Counter counts tokens for budgets and step records. If nil, tokens
	// are estimated at four characters a token. Unless the Counter has an
	// Exact method that returns true (the tokenizers of package tokens do),
	// its counts are an estimate and the runtime calibrates them: they are
	// scaled by the ratio of the input tokens the provider reported for the
	// last request to the runtime's count of that request, kept between
	// 0.5 and 2.
	Counter Counter
	// Pricing, if set, prices usage into RunStats.Cost.
	Pricing llm.Pricing
	// CachedInputFraction is the share of the input price billed for
	// cached tokens, used for Step.BilledInput. Zero means
	// llm.DefaultCachedInputFraction.
	CachedInputFraction float64
	// StableTools keeps a tool that is disabled at a step (defs.Handle's
	// Disable) in that step's request, so that the tool list, which
	// providers cache with the system prompt ahead of the transcript,
	// stays byte-identical when tools come and go. The tool is still not
	// run: a call to it gets an error result saying it is not available
	// now, and Step.Disabled still lists it. Tools left out by
	// effects.Step.LimitTools are left out as before. The zero value (false)
	// leaves disabled tools out of the request, which changes the tool list
	// and breaks the cached prefix at the tools at every change.
	StableTools bool

	// ModelTimeout bounds each model call; zero means no bound beyond the
	// run's context.
	ModelTimeout time.Duration
	// ToolTimeout bounds each tool call. A tool still running at the
	// deadline gets an error result and the run goes on; its goroutine is
	// left to finish on its own (tools should honour ctx). Zero means no
	// bound.
	ToolTimeout time.Duration
	// Now, if set, is the clock of the run's elapsed time (Stats.Elapsed,
	// which limits on time read): a workflow gives its deterministic clock.
	// Nil means time.Now.
	Now func() time.Time
	// ToolExecutor, if set, runs the tool calls of each reply instead of
	// the runtime's goroutines (see ToolExecutor): the Temporal integration
	// runs them as activities. Nil means the runtime runs them itself.
	ToolExecutor ToolExecutor
	// Retries is how many times a model call failing with a retryable
	// *llm.ModelError is sent again by the runtime, with exponential backoff
	// from RetryBackoff (zero means one second) and jitter. Adapters may
	// retry on their own as well; zero means the runtime does not.
	Retries      int
	RetryBackoff time.Duration

	// Store, if set, receives a checkpoint of the session SessionID after
	// every step, after every model reply and after every tool result, so
	// that Resume can continue the run after a crash. New starts a new
	// session (saving fails if SessionID already exists); Resume continues
	// one. The checkpoint that ends a step carries the step's record
	// (session.StepRecord), which cmd/reprompt shows. When Store also
	// implements session.Inbox, messages posted to the session by another
	// process (Post) join the run at its next step, as Runner.Send's do:
	// the runner reads them once per step (see Post).
	Store session.Store
	// SessionID names the session: the checkpoints' (with Store), traces'
	// gen_ai.conversation.id, and every request's llm.Request.SessionID,
	// sub-agents' included, which a provider adapter may use as its
	// prompt-cache key (providers/openai sends it as prompt_cache_key).
	// Empty means none.
	SessionID string

	// OutputMode is how the model is asked for the typed answer a prompt
	// declares with prompt.DefOutput: llm.OutputNative (a strict
	// response_format), llm.OutputTool (a final tool whose arguments are the
	// answer), or llm.OutputAuto, the zero value: OutputNative for a model
	// that implements llm.NativeOutputModel and says so, OutputTool otherwise.
	OutputMode llm.OutputMode
	// OutputRetries is how many invalid typed answers are sent back to the
	// model, with the validation error, before the run ends with an
	// *OutputError. Zero means DefaultOutputRetries; a negative value
	// means none. The count restarts with a valid answer, and when a run
	// is resumed.
	OutputRetries int

	// Name names the agent in traces (gen_ai.agent.name, and the run span
	// "invoke_agent Name") and logs. A sub-agent started by RunAgent is
	// named by its declaration. Empty means unnamed.
	Name string
	// TracerProvider, if set, receives OpenTelemetry spans of the run, named
	// and attributed by the GenAI semantic conventions: see "Tracing" in the
	// package documentation. If nil, nothing is traced and the runtime
	// allocates nothing for tracing.
	TracerProvider trace.TracerProvider
	// TraceContent records message content in spans: system instructions,
	// input and output messages, tool arguments and results, and the
	// dependency values in effect reasons. The zero value records none, as
	// the conventions advise: content may be sensitive. A model that
	// implements llm.Redactor has its secrets redacted from what is
	// recorded.
	TraceContent bool
	// Logger, if set, receives structured records of the run: one per step,
	// warnings for retries, recoveries and compactions, errors with their
	// type (see "Logging" in the package documentation). If nil, nothing is
	// logged.
	Logger *slog.Logger
}

// Counter counts tokens the way a model family's tokenizer does. The
// package tokens provides exact counters; implementations must be safe for
// concurrent use.
type Counter interface {
	Text(s string) int
	Message(m defs.Message) int
	Tool(name, description string, parameters json.RawMessage) int
}
