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
// The examples' agents (the quickstart's, structured's typed answer, in
// both modes, and chat's) run on FromEnv in examples/internal/anthropic, a
// module of its own (the root module does not require this one):
//
//	cd examples/internal/anthropic && ANTHROPIC_API_KEY=… go run -tags live . quickstart|structured|chat
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
//
// # Requests on the wire
//
// Each message is mapped to its content blocks and each block encoded
// once, by the SDK's own types, when it first appears; the part of the
// request around the messages (configuration, tools) is encoded once, and
// again only when it changes, and the system prompt, which the runtime
// renders anew at each step, apart from it. A request body is
// assembled from these bytes, with the cache breakpoints placed at every
// request on the cached blocks, and sent through the SDK in place of its
// own encoding: byte for byte the body the SDK would send
// (TestWireBodyMatchesSDK, TestWireSentAsSDK), so a step costs the new
// messages, not the whole transcript. The cache compares every message
// with what it encoded (content, tool calls, ids, thinking blocks), so a
// transcript that was trimmed, compacted or edited in place is never sent
// stale; it keeps the transcripts of the last 4 conversations a Model
// served.
//
// BenchmarkWire runs scenario S1 through the runtime and the adapter
// against a local server, beside a plain loop on the SDK sending the same
// requests (client.Messages.New with a growing MessageNewParams). Per
// step, the median of 6 runs interleaved with the bare loop's, on a
// shared 2-core machine (load average 7-12):
//
//	steps  cpu time           wall time          bytes allocated
//	   10  0.94× (0.88-1.01)  0.97× (0.70-1.15)  0.82×
//	  100  0.40× (0.38-0.44)  0.42× (0.27-0.56)  0.33×
//	 1000  0.14× (0.13-0.16)  0.13× (0.11-0.15)  0.13×
//
// (reprompt over bare, the range of the 6 rounds in parentheses), where
// encoding the whole transcript at every step cost 1.3-1.4× at every
// length. The runtime's own work is in the adapter's figures. Measured
// with
//
//	go test ./providers/anthropic -run '^$' -bench Wire -count 6 >wire.txt
//	benchstat -col /impl wire.txt
//
// TestWireAllocRatio fails when the bytes allocated at 100 steps pass
// 0.6× the bare loop's (they are 0.33×): bytes, unlike time, do not vary
// with the machine's load.
package anthropic
