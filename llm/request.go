package llm

import (
	"encoding/json"

	"github.com/reprompt/reprompt/defs"
)

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
	// SessionID is the id of the session the request belongs to: the
	// runtime's Config.SessionID, which the requests of a sub-agent (and
	// the summaries effects ask for) carry as well; "" when the run has
	// none. Requests with the same SessionID and Agent are one
	// conversation, each extending the previous one's prefix: an adapter
	// may derive a provider's prompt-cache key from them (providers/openai
	// sends prompt_cache_key), never a secret.
	SessionID string
	// Purpose says what the request is for: PurposeStep (the zero value)
	// for a step of the loop, PurposeSummary for a completion an effect
	// asked for through effects.Step.Model (compaction's summaries), which
	// goes to the runtime's Config.Summarizer and has no tools.
	Purpose Purpose
	// Output, if set, is the typed answer the prompt declared
	// (prompt.DefOutput), with the way it is asked for (see OutputSpec).
	Output *OutputSpec
	// Committed is how many leading messages of Messages are the
	// transcript's committed part: no effect will rewrite them before the
	// next step, so the next step's request starts with them unchanged.
	// The runtime takes it from what the run's effects declared
	// (effects.Step.WillRewrite): the part before the earliest rewrite
	// one of them declared for its next run, never past the messages that
	// are the transcript's (a view's messages are this step's only).
	// len(Messages) means nothing is to be rewritten; 0 means that no
	// effect declared anything (the runtime knows nothing of the effects
	// that do not declare), or that the first message may be rewritten.
	// An adapter of a provider whose prompt cache needs breakpoints
	// (providers/anthropic) marks the end of this part, which the next
	// request reads. It is a promise about prompt caching only: an effect
	// that rewrites more than it declared costs cache reads, never
	// correctness.
	Committed int
	// Repeated is how many leading messages this request repeats,
	// unchanged, of the previous step's request, counted to one of the two
	// places where that request's breakpoints were: all of its messages,
	// else its committed part (its Committed); 0 when it repeats neither.
	// An adapter that places breakpoints marks it, to read what the
	// previous request wrote there.
	Repeated int
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

// OutputMode is how a model is asked for the typed answer a prompt declared
// with prompt.DefOutput (see the runtime's Config.OutputMode).
type OutputMode string

// Output modes.
const (
	// OutputAuto picks OutputNative for a model that says it takes a strict
	// response_format (it implements NativeOutputModel and NativeOutput
	// returns true), OutputTool otherwise.
	OutputAuto OutputMode = ""
	// OutputNative sends the answer's schema as the request's
	// response_format (json_schema, strict): the model answers with the
	// JSON value as its text.
	OutputNative OutputMode = "response_format"
	// OutputTool offers a final tool named after the output whose arguments
	// are the answer: the run ends when the model calls it with valid
	// arguments. It works with any model that calls tools.
	OutputTool OutputMode = "tool"
)

// OutputSpec is the typed answer a request asks for (Request.Output).
type OutputSpec struct {
	// Name names the answer: the response_format's json_schema name, or
	// the answer tool's name.
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Type is the Go type of the answer.
	Type string `json:"type"`
	// Schema is the answer's JSON Schema, in strict form (every property
	// required, no additional properties).
	Schema json.RawMessage `json:"schema"`
	// Mode is OutputNative or OutputTool, never OutputAuto. With
	// OutputTool, Request.Tools ends with the answer tool (Name, Schema);
	// an adapter sends a response_format only for OutputNative.
	Mode OutputMode `json:"mode"`
}
