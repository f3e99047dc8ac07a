// Package anthropic adapts Anthropic's Messages API to the model contract
// of package llm, through the official Go SDK
// (github.com/anthropics/anthropic-sdk-go/v2). It is a module of its own,
// so that users of the core never download the SDK, and it imports llm and
// defs, never the runtime.
//
// A *Model implements llm.Model, llm.StreamingModel and
// llm.NativeOutputModel.
//
// # Configuration
//
// New takes a Config whose zero value is usable (see Config for each
// default); FromEnv reads ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL and
// ANTHROPIC_MODEL. Nothing else is read from the environment: the SDK's
// own defaults (profiles, other variables) are turned off.
//
//	m := anthropic.FromEnv()
//	reply, err := m.Generate(ctx, &llm.Request{
//		System:   "You answer in one word.",
//		Messages: []defs.Message{defs.UserMessage("Capital of France?")},
//	})
//
// # Mapping
//
// Request.System becomes the system parameter, with any system messages
// that open the transcript; later system messages are sent as user text.
// Tool results become tool_result blocks of a user message (is_error
// set for a failure), and consecutive messages of one role are merged, as
// the API requires alternating roles; empty text is left out. Tools are
// sent with their JSON Schema as input_schema. A typed answer asked for
// natively (llm.OutputNative) is sent as output_config.format; otherwise
// the runtime offers an answer tool, which works with any model.
//
// A reply carries the text, every tool call (parallel ones in order), the
// stop reason mapped to an llm.FinishReason (end_turn and stop_sequence:
// stop; tool_use: tool_calls; max_tokens and
// model_context_window_exceeded: length; refusal: content_filter, with
// Reply.Refusal set; others as they are), and the usage: llm.Usage counts
// cache reads (CachedTokens) and writes (CacheWriteTokens, the part
// written for an hour in CacheWrite1hTokens) within InputTokens, where
// the API counts them apart.
//
// # Extended thinking
//
// With Config.ThinkingBudget (or AdaptiveThinking), the reply's thinking
// text is its Reasoning, and its thinking and redacted_thinking blocks
// are kept whole, with their signatures, in Meta[MetaThinking]. The
// adapter sends them back, unchanged and first, in that assistant turn:
// the API requires it of the turn a tool result answers. An effect that
// rewrites such a message must keep that Meta key.
//
// # Prompt caching
//
// Anthropic caches nothing without cache_control breakpoints, so the
// adapter places them (at most 4): after the tools and system prompt;
// where the previous step's request had one that this request repeats
// (llm.Request.Repeated: that request's end or its committed part), or,
// when the runtime says nothing, at the end of the previous step's request
// (the turn before the last assistant turn), so that the cache it wrote is
// read however many blocks were added since; at the end of the transcript's
// committed part (llm.Request.Committed: what no effect will rewrite
// before the next step), so that the next request reads it even when the
// step rewrites what follows (trimming an answered tool result); and at
// the end of the transcript, for a next step that rewrites nothing.
// Config.Cache sets their TTL (5 minutes or an hour) or turns them off.
//
// # Errors and retries
//
// Every error is an *llm.ModelError that keeps the HTTP status whatever
// the body (JSON, HTML from a proxy, empty) and unwraps to the SDK's
// *anthropic.Error when the server answered one. A request too long for
// the context window ("prompt is too long") has ContextTooLong set. Rate
// limits (429), overloaded servers (529), other 5xx, dropped connections
// and cut streams are retryable and retried with exponential backoff and
// jitter, honouring the server's retry-after (and x-should-retry); the
// SDK's own retries are off. A stream is never retried once a delta was
// delivered. An error event inside a stream takes the status its type
// stands for (overloaded_error: 529). Config.MaxReplyBytes (32 MiB by
// default) bounds every response body; past it the call fails with a
// *ReplyTooLargeError.
//
// # Secrets
//
// The API key never appears in an error: where a server or proxy echoes
// it, every occurrence is replaced by Redacted, in the ModelError and in
// the SDK's error it wraps (its message, its body, the headers of the
// request it keeps). Config and *Model print and log (fmt, slog) with the
// key redacted.
package anthropic
