// Package openai adapts OpenAI-compatible Chat Completions servers to the
// model contract of package llm, through github.com/sashabaranov/go-openai.
// It never imports the runtime, and it is the only package of the module
// that imports go-openai.
//
// A *Model implements llm.Model and llm.StreamingModel. The same
// code runs against OpenAI, Ollama, vLLM or a llama.cpp server: only the
// base URL, the model name and the key change.
//
// # Configuration
//
// New takes a Config whose zero value is usable (see Config for each
// default); FromEnv reads OPENAI_API_KEY, OPENAI_BASE_URL and OPENAI_MODEL.
// With Ollama running locally:
//
//	export OPENAI_BASE_URL=http://localhost:11434/v1
//	export OPENAI_MODEL=qwen3:4b   # any model pulled with `ollama pull`
//	# no OPENAI_API_KEY: Ollama needs none
//
//	m := openai.FromEnv()
//	reply, err := m.Generate(ctx, &llm.Request{
//		System:   "You answer in one word.",
//		Messages: []defs.Message{defs.UserMessage("Capital of France?")},
//	})
//
// The examples take the same variables when built with -tags live:
//
//	OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=qwen3:4b go run -tags live ./examples/quickstart
//
// The same variables work for vLLM or a llama.cpp server (their /v1 URL)
// and for OpenAI (OPENAI_API_KEY only). Or, without the environment:
//
//	m := openai.New(openai.Config{BaseURL: "http://localhost:11434/v1", Model: "qwen3:4b"})
//
// # Mapping
//
// Request.System becomes a leading system message (none when empty).
// Messages keep their roles; assistant tool calls carry their ids and raw
// JSON arguments, tool results their tool_call_id. Tools are sent as
// function tools with their JSON Schema parameters. A reply carries the
// content, the reasoning text when the server sends one (reasoning_content
// or reasoning), every tool call, the finish reason and the usage,
// including cached prompt tokens, cache writes where the server reports
// them (prompt_tokens_details.cache_write_tokens, or the
// cache_creation_input_tokens a proxy serving Claude models passes on) and
// reasoning tokens.
//
// # Prompt caching
//
// OpenAI caches the prefix of every long enough request on its own. A
// request to OpenAI's API (Config.Cache) also carries prompt_cache_key,
// which sends the requests of one conversation to the same cache: by
// default the request's session (llm.Request.SessionID, the runtime's
// Config.SessionID, with the sub-agent's name for a sub-agent's requests),
// or Config.PromptCacheKey. Config.PromptCacheRetention asks for the
// in-memory or the 24-hour retention, sent to the models that take it.
// Both are validated, in the tests, against OpenAI's OpenAPI description.
//
// Reasoning models (names starting with o1, o3, o4, gpt-5, gpt-6, or
// Config.Reasoning set to ReasoningOn) get max_completion_tokens and no
// temperature or top_p; other models get max_tokens, temperature and top_p.
//
// # Errors and retries
//
// Every error is an *llm.ModelError that unwraps to go-openai's
// *openai.APIError or *openai.RequestError, so errors.As reaches them. A
// request rejected as too long for the context window has ContextTooLong
// set. Rate limits, server errors, dropped connections and cut streams are
// retryable and retried with exponential backoff and jitter, honouring the
// server's Retry-After; a stream is never retried once a delta was
// delivered.
//
// Servers that are not OpenAI answer errors in other shapes: an "error"
// that is a string ({"error":"Service Unavailable"}), an HTML page from a
// proxy, an empty body. The HTTP status always reaches ModelError.StatusCode
// and decides the retry, and the message shows the body's text: a JSON
// string unquoted, an HTML page by its title (its text without tags when it
// has none). An error event inside a stream that began with 200 takes the
// status its body names (a "status" or "code" number, or an "error" that is
// a status text), or else the one OpenAI answers its code with (429 for
// rate_limit_exceeded and insufficient_quota, 500 for server_error). A
// stream event whose data is a bare JSON string (data: "Service
// Unavailable", as @dwmkerr/mock-llm sends an error to a streaming client)
// is an error event: its status is the one its text names ("Service
// Unavailable", "502 Bad Gateway"), else 502 Bad Gateway, and it is
// retried like any 5xx. A 404 whose body is not OpenAI's, from a BaseURL
// whose path names no API version (/v1, /api/v1, /v1beta/openai), says to
// check that BaseURL ends in /v1.
// A failure reported inside a successful reply is an error too, and the
// partial reply is dropped: a 200 body whose top level is {"error":…}, a
// stream chunk with an "error" beside its choices (OpenRouter's mid-stream
// failure), and finish_reason "error" (ErrReplyFailed, retryable). A
// server that ignores "stream": true and answers a whole JSON reply is
// read as such by Stream, which delivers its parts as deltas; content sent
// as an array of parts, and tool arguments sent as a JSON object rather
// than a string, are read as they are (odd_server_test.go).
//
// Config.MaxReplyBytes (32 MiB by default) bounds every response body,
// streamed or not; past it the call fails with a *ReplyTooLargeError.
//
// # Secrets
//
// The API key never appears in an error: where a server or proxy echoes it
// (an Authorization header copied into an error body), every occurrence is
// replaced by Redacted, in the ModelError and in go-openai's errors it
// wraps, so recordings (snapshots.Record) and golden files made from them
// hold no key either. Config and *Model print and log (fmt, slog) with the
// key redacted. A key echoed inside a successful reply (its text, its
// reasoning, a tool call's arguments) stays in the reply, which the run
// acts on, but *Model implements llm.Redactor, and the runtime redacts it
// from every span and log record it writes (Config.TraceContent,
// Config.Logger).
//
// # Requests on the wire
//
// Each message is encoded once, when it first appears; a request body is
// assembled from the cached encodings, so a step costs the new messages,
// not the whole history. The cache compares every message with what it
// encoded (content, tool calls, ids), so a transcript that was trimmed,
// compacted or edited in place is never sent stale. go-openai still sends
// the request and reads responses, streams and errors.
package openai
