package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/reprompt/reprompt/defs"
)

// Model is a language model the runtime drives. Implementations must be safe
// for concurrent use when the prompt declares sub-agents that run in
// parallel tool calls.
type Model interface {
	// Generate sends one request and returns the model's reply. An error
	// should be a *ModelError when the implementation knows the status.
	Generate(ctx context.Context, req *Request) (*Reply, error)
}

// StreamingModel is a Model that can deliver a reply as it is produced. The
// runtime uses Stream instead of Generate when Config.OnDelta is set.
type StreamingModel interface {
	Model
	// Stream behaves like Generate and calls onDelta, from the calling
	// goroutine, for each piece of the reply as it arrives.
	Stream(ctx context.Context, req *Request, onDelta func(Delta)) (*Reply, error)
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

// Delta is a piece of a streamed reply.
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

// Request is what the runtime sends to a model: the request of one step,
// or a summary an effect asked for (see Purpose).
//
// Messages shares memory with the run's transcript, and Tools with the
// requests of other steps: both must be treated as read-only, by the model
// and by whoever keeps the request.
type Request struct {
	// System is the rendered system prompt; empty means no system message.
	System string
	// Messages is the conversation, oldest first.
	Messages []defs.Message
	// Tools are the tools the model may call, in declaration order.
	Tools []ToolSpec
	// Agent is the name of the sub-agent the request is for, as declared
	// with DefAgent (a sub-agent of a sub-agent gives its own name); "" for
	// the run's own prompt. A scripted model uses it to answer each agent
	// from its own replies.
	Agent string
	// Step is the number of the step the request belongs to, counted in
	// the run of Agent.
	Step int
	// Purpose says what the request is for: PurposeStep (the zero value)
	// for a step of the loop, PurposeSummary for a completion an effect
	// asked for through effects.Step.Model (compaction's summaries), which
	// goes to Config.Summarizer and has no tools.
	Purpose Purpose
	// Output, if set, is the typed answer the prompt declared
	// (prompt.DefOutput), with the way it is asked for (see OutputSpec).
	Output *OutputSpec
}

// Purpose is what a Request is for.
type Purpose string

// Purposes of a request.
const (
	// PurposeStep is a request of the step loop; its reply joins the
	// transcript.
	PurposeStep Purpose = ""
	// PurposeSummary is a completion outside the transcript that an effect
	// asked for through effects.Step.Model: compaction's summaries.
	PurposeSummary Purpose = "summary"
)

// ToolSpec is a tool as the model sees it.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

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
	// a typed answer ends with an *OutputError carrying it.
	Refusal string
}

// FinishReason says why a model stopped producing a reply.
type FinishReason string

// Finish reasons common to providers.
const (
	FinishStop          FinishReason = "stop"
	FinishToolCalls     FinishReason = "tool_calls"
	FinishLength        FinishReason = "length"
	FinishContentFilter FinishReason = "content_filter"
)

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
}

// Total returns InputTokens + OutputTokens.
func (u Usage) Total() int { return u.InputTokens + u.OutputTokens }

// ModelError is the provider-neutral error a model adapter returns. It
// unwraps to the provider's own error.
type ModelError struct {
	// StatusCode is the HTTP status, or 0 when there was none (a network
	// error, a stream cut short).
	StatusCode int
	// Retryable reports whether sending the same request again may succeed
	// (rate limits, server errors, dropped connections).
	Retryable bool
	// ContextTooLong reports that the provider rejected the request as too
	// long for the model's context window.
	ContextTooLong bool
	// Message is the provider's explanation.
	Message string
	// Err is the underlying error.
	Err error
}

func (e *ModelError) Error() string {
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	if e.StatusCode != 0 {
		return fmt.Sprintf("model error (status %d, retryable=%t): %s", e.StatusCode, e.Retryable, msg)
	}
	return fmt.Sprintf("model error (retryable=%t): %s", e.Retryable, msg)
}

func (e *ModelError) Unwrap() error { return e.Err }

// IsRetryable reports whether err is, or wraps, a retryable *ModelError.
func IsRetryable(err error) bool {
	var me *ModelError
	return errors.As(err, &me) && me.Retryable
}
