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
	// InputTokens are the tokens of the request (prompt), all of them:
	// those read from the prompt cache (CachedTokens), those written to it
	// (CacheWriteTokens) and the others (see Split).
	InputTokens int `json:"input_tokens"`
	// OutputTokens are the tokens of the reply (completion), reasoning
	// tokens included.
	OutputTokens int `json:"output_tokens"`
	// CachedTokens are the part of InputTokens the provider read from its
	// prompt cache (billed at Pricing.CacheRead); 0 when it reports none.
	CachedTokens int `json:"cached_tokens,omitempty"`
	// ReasoningTokens are the part of OutputTokens spent on reasoning; 0
	// when the provider reports none.
	ReasoningTokens int `json:"reasoning_tokens,omitempty"`
	// CacheWriteTokens are the part of InputTokens the provider wrote to
	// its prompt cache for later requests to read, which some providers
	// bill above the input price (Anthropic: 1.25× for an entry that lives
	// 5 minutes, 2× for one that lives an hour; see Pricing.CacheWrite);
	// 0 when it reports none. They are disjoint from CachedTokens: the
	// tokens neither read nor written are UncachedInputTokens.
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
	// CacheWrite1hTokens are the part of CacheWriteTokens written to an
	// entry that lives an hour (Anthropic's cache_control ttl "1h"); the
	// rest lives the provider's default time (5 minutes for Anthropic).
	CacheWrite1hTokens int `json:"cache_write_1h_tokens,omitempty"`
}

// Total returns InputTokens + OutputTokens (cache reads and writes are
// parts of InputTokens, not added again).
func (u Usage) Total() int { return u.InputTokens + u.OutputTokens }

// InputSplit is a request's input tokens split into the disjoint parts a
// provider bills at different prices (see Usage.Split and Pricing).
type InputSplit struct {
	// Uncached are the tokens neither read from the prompt cache nor
	// written to it, billed at the input price.
	Uncached int
	// CacheRead are the tokens read from the cache (Usage.CachedTokens).
	CacheRead int
	// CacheWrite are the tokens written to the cache for the provider's
	// default lifetime (Usage.CacheWriteTokens less CacheWrite1hTokens).
	CacheWrite int
	// CacheWrite1h are the tokens written to an entry that lives an hour
	// (Usage.CacheWrite1hTokens).
	CacheWrite1h int
}

// Split returns InputTokens split into uncached tokens, cache reads and
// cache writes; the four parts sum to InputTokens. A count a server
// reports below zero is taken as 0, and parts that would exceed their
// total are cut: cache reads to InputTokens, cache writes to what the
// reads leave, the hour's writes to the writes.
func (u Usage) Split() InputSplit {
	in := max(u.InputTokens, 0)
	read := min(max(u.CachedTokens, 0), in)
	write := min(max(u.CacheWriteTokens, 0), in-read)
	hour := min(max(u.CacheWrite1hTokens, 0), write)
	return InputSplit{Uncached: in - read - write, CacheRead: read, CacheWrite: write - hour, CacheWrite1h: hour}
}

// UncachedInputTokens returns the input tokens neither read from the
// prompt cache nor written to it: Split().Uncached.
func (u Usage) UncachedInputTokens() int { return u.Split().Uncached }

// Pricing is the price of tokens: Input and Output in US dollars per
// million tokens, and the prompt cache's reads and writes as shares of
// the Input price (the way providers publish them: Anthropic bills a
// read at 0.1 of the input price and a write at 1.25). The zero Pricing
// prices everything at nothing; the zero value of a share is its default.
//
// Profiles of known models (effects/builtin.ProfileFor) carry the shares
// their providers publish: CachedInputFraction, CacheWriteFraction and
// CacheWrite1hFraction.
type Pricing struct {
	// Input is the price of an input token neither read from the cache nor
	// written to it, and the base of the cache's shares.
	Input float64
	// Output is the price of an output token, reasoning included.
	Output float64
	// CacheRead is the price of an input token read from the prompt cache
	// (Usage.CachedTokens), as a share of Input: 0.1 for Anthropic's models
	// and OpenAI's gpt-5 family, 0.25 or 0.5 for older OpenAI models. Zero
	// means DefaultCachedInputFraction.
	CacheRead float64
	// CacheWrite is the price of an input token written to the prompt
	// cache for the provider's default lifetime, as a share of Input: 1.25
	// for Anthropic's 5-minute cache; 1 for a provider that bills a write
	// as the input it is (OpenAI, for the models this module knows). Zero
	// means 1.
	CacheWrite float64
	// CacheWrite1h is the price of an input token written to an entry that
	// lives an hour (Usage.CacheWrite1hTokens), as a share of Input: 2 for
	// Anthropic. Zero means CacheWrite.
	CacheWrite1h float64
}

// DefaultCachedInputFraction is the share of the input price a provider
// bills for cached prompt tokens when Pricing.CacheRead, or the runtime's
// Config.CachedInputFraction, is zero.
const DefaultCachedInputFraction = 0.1

// Shares returns the shares of the input price p bills cache reads,
// writes and the hour's writes at, with the defaults applied.
func (p Pricing) Shares() (read, write, write1h float64) {
	read, write, write1h = p.CacheRead, p.CacheWrite, p.CacheWrite1h
	if read == 0 {
		read = DefaultCachedInputFraction
	}
	if write == 0 {
		write = 1
	}
	if write1h == 0 {
		write1h = write
	}
	return read, write, write1h
}

// InputCost returns the price of u's input tokens in US dollars: each part
// of u.Split() at its price.
func (p Pricing) InputCost(u Usage) float64 {
	s := u.Split()
	read, write, write1h := p.Shares()
	tokens := float64(s.Uncached) + read*float64(s.CacheRead) + write*float64(s.CacheWrite) + write1h*float64(s.CacheWrite1h)
	return tokens * p.Input / 1e6
}

// Cost returns the price of u in US dollars: InputCost, plus its output
// tokens (below zero taken as 0) at Output.
func (p Pricing) Cost(u Usage) float64 {
	return p.InputCost(u) + float64(max(u.OutputTokens, 0))*p.Output/1e6
}
