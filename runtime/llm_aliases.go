package runtime

import "github.com/reprompt/reprompt/llm"

// The names of the model contract, moved to package llm, for the packages
// that still use them from here. Removed once no package does.
type (
	Model             = llm.Model
	StreamingModel    = llm.StreamingModel
	NativeOutputModel = llm.NativeOutputModel
	ModelNamer        = llm.ModelNamer
	ProviderNamer     = llm.ProviderNamer
	Request           = llm.Request
	Purpose           = llm.Purpose
	ToolSpec          = llm.ToolSpec
	OutputMode        = llm.OutputMode
	OutputSpec        = llm.OutputSpec
	Reply             = llm.Reply
	FinishReason      = llm.FinishReason
	Delta             = llm.Delta
	ToolCallDelta     = llm.ToolCallDelta
	Usage             = llm.Usage
	Pricing           = llm.Pricing
	ModelError        = llm.ModelError
	RequestError      = llm.RequestError
)

const (
	PurposeStep                = llm.PurposeStep
	PurposeSummary             = llm.PurposeSummary
	OutputAuto                 = llm.OutputAuto
	OutputNative               = llm.OutputNative
	OutputTool                 = llm.OutputTool
	FinishStop                 = llm.FinishStop
	FinishToolCalls            = llm.FinishToolCalls
	FinishLength               = llm.FinishLength
	FinishContentFilter        = llm.FinishContentFilter
	DefaultCachedInputFraction = llm.DefaultCachedInputFraction
)

var IsRetryable = llm.IsRetryable
