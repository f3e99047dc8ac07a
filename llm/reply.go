package llm

import "github.com/reprompt/reprompt/defs"

// Reply is a model's answer to one request.
type Reply struct {
	// Message is the assistant message; its ToolCalls are run by the
	// runtime. Its Role is set to RoleAssistant if empty.
	Message defs.Message
	// Usage is what the provider reported; zero if it reported nothing.
	Usage Usage
	// FinishReason is the provider's reason for ending the reply.
	FinishReason FinishReason
	// ID is the provider's identifier of the response, if it gave one
	// (gen_ai.response.id in traces).
	ID string
	// Refusal is the model's refusal to answer, when the provider reports
	// one apart from the content (OpenAI's refusal field); a run expecting
	// a typed answer ends with the runtime's *OutputError carrying it.
	Refusal string
}

// FinishReason says why a model stopped producing a reply. An adapter
// passes on a reason of its provider that none of the constants names as it
// is.
type FinishReason string

// Finish reasons common to providers.
const (
	FinishStop          FinishReason = "stop"
	FinishToolCalls     FinishReason = "tool_calls"
	FinishLength        FinishReason = "length"
	FinishContentFilter FinishReason = "content_filter"
)

// Delta is a piece of a streamed reply (see StreamingModel).
type Delta struct {
	Content   string
	Reasoning string
	// ToolCall is set when a tool call's name or a fragment of its arguments
	// arrives; Index is its position in the reply.
	ToolCall *ToolCallDelta
}

// ToolCallDelta is a fragment of a streamed tool call.
type ToolCallDelta struct {
	Index     int
	ID        string
	Name      string
	Arguments string
}

// Usage is the token usage a provider reported for one request.
type Usage struct {
	// InputTokens are the tokens of the request (prompt), cached ones
	// included.
	InputTokens int `json:"input_tokens"`
	// OutputTokens are the tokens of the reply (completion), reasoning
	// tokens included.
	OutputTokens int `json:"output_tokens"`
	// CachedTokens are the part of InputTokens the provider read from its
	// prompt cache (billed at Pricing.CachedInput); 0 when it reports none.
	CachedTokens int `json:"cached_tokens,omitempty"`
	// ReasoningTokens are the part of OutputTokens spent on reasoning; 0
	// when the provider reports none.
	ReasoningTokens int `json:"reasoning_tokens,omitempty"`
	// CacheWriteTokens are the part of InputTokens the provider wrote to
	// its prompt cache for later requests to read, which some providers
	// bill above the input price (Anthropic: 1.25× for an entry that lives
	// 5 minutes, 2× for one that lives an hour); 0 when it reports none.
	// They are disjoint from CachedTokens.
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
	// CacheWrite1hTokens are the part of CacheWriteTokens written to an
	// entry that lives an hour (Anthropic's cache_control ttl "1h"); the
	// rest lives the provider's default time (5 minutes for Anthropic).
	CacheWrite1hTokens int `json:"cache_write_1h_tokens,omitempty"`
}

// Total returns InputTokens + OutputTokens (cache reads and writes are
// parts of InputTokens, not added again).
func (u Usage) Total() int { return u.InputTokens + u.OutputTokens }

// Pricing is the price of tokens, in US dollars per million. The zero
// Pricing prices everything at nothing.
type Pricing struct {
	Input, CachedInput, Output float64
}

// DefaultCachedInputFraction is the share of the input price a provider
// bills for cached prompt tokens when the runtime's
// Config.CachedInputFraction is zero.
const DefaultCachedInputFraction = 0.1
