package llm

import "context"

// Model is a language model the runtime drives. Implementations must be safe
// for concurrent use when the prompt declares sub-agents that run in
// parallel tool calls.
type Model interface {
	// Generate sends one request and returns the model's reply. An error
	// should be a *ModelError when the implementation knows the status.
	// Generate must not modify req or what it shares (see Request).
	Generate(ctx context.Context, req *Request) (*Reply, error)
}

// StreamingModel is a Model that can deliver a reply as it is produced. The
// runtime uses Stream instead of Generate when its Config.OnDelta is set.
type StreamingModel interface {
	Model
	// Stream behaves like Generate and calls onDelta, from the calling
	// goroutine, for each piece of the reply as it arrives.
	Stream(ctx context.Context, req *Request, onDelta func(Delta)) (*Reply, error)
}

// NativeOutputModel is an optional interface of a Model. NativeOutput
// reports whether the model takes the typed answer as a strict
// response_format (OpenAI's structured outputs): with the runtime's
// Config.OutputMode OutputAuto, the runtime uses OutputNative when it
// returns true and OutputTool otherwise (and for models without the
// method).
type NativeOutputModel interface {
	NativeOutput() bool
}

// ModelNamer is an optional interface of a Model. ModelName returns the
// name of the model requests are sent to, for traces (gen_ai.request.model
// and the span name "chat ModelName") and logs; "" means unknown.
type ModelNamer interface {
	ModelName() string
}

// ProviderNamer is an optional interface of a Model. ProviderName returns
// the provider's name as the GenAI semantic conventions spell it
// ("openai", "anthropic", "aws.bedrock", ...), for traces
// (gen_ai.provider.name); "" means unknown.
type ProviderNamer interface {
	ProviderName() string
}

// Redactor is an optional interface of a Model that holds a secret a
// server may echo back (an API key copied into a reply by a proxy, a
// model that repeats its prompt). Redact returns s with every secret of
// the model replaced by a placeholder, and s itself when it holds none.
//
// The runtime applies Redact to every text it records about a run, and
// only there: the content of spans with Config.TraceContent (system
// instructions, input and output messages, reasoning, tool arguments and
// results, effect reasons), span statuses and exception events, and the
// errors in log records. The reply the run uses, the transcript and the
// session keep the model's text as it came: a model must not change its
// reply to hide a secret, since the run acts on it.
//
// Redact must be safe for concurrent use and must not return text that
// holds a secret of the model.
type Redactor interface {
	Redact(s string) string
}
