// Package openai adapts OpenAI-compatible Chat Completions servers to the
// runtime's model interface, through github.com/sashabaranov/go-openai. It
// is the only package of the module that imports go-openai.
//
// A *Model implements runtime.Model and runtime.StreamingModel. The same
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
//	reply, err := m.Generate(ctx, &runtime.Request{
//		System:   "You answer in one word.",
//		Messages: []defs.Message{defs.UserMessage("Capital of France?")},
//	})
//
// or, without the environment:
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
// including cached prompt tokens and reasoning tokens.
//
// Reasoning models (names starting with o1, o3, o4, gpt-5, gpt-6, or
// Config.Reasoning set to ReasoningOn) get max_completion_tokens and no
// temperature or top_p; other models get max_tokens, temperature and top_p.
//
// # Errors and retries
//
// Every error is a *runtime.ModelError that unwraps to go-openai's
// *openai.APIError or *openai.RequestError, so errors.As reaches them. A
// request rejected as too long for the context window has ContextTooLong
// set. Rate limits, server errors, dropped connections and cut streams are
// retryable and retried with exponential backoff and jitter, honouring the
// server's Retry-After; a stream is never retried once a delta was
// delivered.
package openai
