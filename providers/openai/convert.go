package openai

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/sashabaranov/go-openai"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
)

// isReasoningModel reports whether name belongs to a family that takes
// max_completion_tokens and rejects temperature.
func isReasoningModel(name string) bool {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	name = strings.ToLower(name)
	for _, p := range []string{"o1", "o3", "o4", "gpt-5", "gpt-6"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// sdkTakesForReasoning reports whether go-openai's own validator treats
// name as a reasoning model and refuses max_tokens and temperature for it.
func sdkTakesForReasoning(name string) bool {
	for _, p := range []string{"o1", "o3", "o4", "gpt-5"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// emptyParameters is sent for a tool without a parameter schema.
var emptyParameters = json.RawMessage(`{"type":"object","properties":{}}`)

// requestFields maps the configuration, tools and output to a go-openai
// request without messages, and the body patch that carries what the SDK's
// types cannot. A native output (llm.OutputNative) becomes a strict
// json_schema response_format; another output is among the tools already.
func (m *Model) requestFields(tools []llm.ToolSpec, output *llm.OutputSpec, stream bool) (sdk.ChatCompletionRequest, bodyPatch) {
	c := &m.cfg
	out := sdk.ChatCompletionRequest{
		Model:           c.Model,
		Stop:            c.Stop,
		Seed:            c.Seed,
		ReasoningEffort: c.ReasoningEffort,
	}
	var patch bodyPatch

	reasoning := c.Reasoning == ReasoningOn || (c.Reasoning == ReasoningAuto && isReasoningModel(c.Model))
	switch {
	case reasoning:
		out.MaxCompletionTokens = c.MaxTokens
	case sdkTakesForReasoning(c.Model):
		// go-openai would refuse these fields: send them through the patch.
		if c.MaxTokens > 0 {
			patch.set("max_tokens", c.MaxTokens)
		}
		if c.Temperature != nil {
			patch.set("temperature", *c.Temperature)
		}
		if c.TopP != nil {
			patch.set("top_p", *c.TopP)
		}
	default:
		// max_tokens is deprecated by OpenAI for reasoning models only, and
		// it is the field Ollama, vLLM and llama.cpp servers read.
		//lint:ignore SA1019 see above
		out.MaxTokens = c.MaxTokens
		if c.Temperature != nil {
			out.Temperature = float32(*c.Temperature)
			if *c.Temperature == 0 {
				patch.set("temperature", 0)
			}
		}
		if c.TopP != nil {
			out.TopP = float32(*c.TopP)
			if *c.TopP == 0 {
				patch.set("top_p", 0)
			}
		}
	}
	out.Stream = stream
	if stream && !c.OmitStreamUsage {
		out.StreamOptions = &sdk.StreamOptions{IncludeUsage: true}
	}

	for _, t := range tools {
		params := t.Parameters
		if len(bytes.TrimSpace(params)) == 0 || string(bytes.TrimSpace(params)) == "null" {
			params = emptyParameters
		}
		out.Tools = append(out.Tools, sdk.Tool{
			Type: sdk.ToolTypeFunction,
			Function: &sdk.FunctionDefinition{
				Name:        t.Name,
				Description: t.Description,
				Parameters:  params,
			},
		})
	}
	if len(out.Tools) > 0 && c.ParallelToolCalls != nil {
		out.ParallelToolCalls = *c.ParallelToolCalls
	}
	if output != nil && output.Mode == llm.OutputNative {
		out.ResponseFormat = &sdk.ChatCompletionResponseFormat{
			Type: sdk.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &sdk.ChatCompletionResponseFormatJSONSchema{
				Name:        output.Name,
				Description: output.Description,
				Schema:      output.Schema,
				Strict:      true,
			},
		}
	}
	return out, patch
}

func (m *Model) convertMessage(msg defs.Message) (sdk.ChatCompletionMessage, error) {
	switch msg.Role {
	case defs.RoleUser:
		return sdk.ChatCompletionMessage{Role: sdk.ChatMessageRoleUser, Content: msg.Content, Name: msg.Name}, nil
	case defs.RoleSystem:
		return sdk.ChatCompletionMessage{Role: sdk.ChatMessageRoleSystem, Content: msg.Content, Name: msg.Name}, nil
	case defs.RoleTool:
		if msg.ToolCallID == "" {
			return sdk.ChatCompletionMessage{}, fmt.Errorf("tool message without tool_call_id")
		}
		return sdk.ChatCompletionMessage{Role: sdk.ChatMessageRoleTool, Content: msg.Content, ToolCallID: msg.ToolCallID}, nil
	case defs.RoleAssistant:
		om := sdk.ChatCompletionMessage{Role: sdk.ChatMessageRoleAssistant, Content: msg.Content}
		if m.cfg.ReplayReasoning {
			om.ReasoningContent = msg.Reasoning
		}
		for _, tc := range msg.ToolCalls {
			om.ToolCalls = append(om.ToolCalls, sdk.ToolCall{
				ID:       tc.ID,
				Type:     sdk.ToolTypeFunction,
				Function: sdk.FunctionCall{Name: tc.Name, Arguments: argumentsText(tc.Arguments)},
			})
		}
		return om, nil
	default:
		return sdk.ChatCompletionMessage{}, fmt.Errorf("unsupported role %q", msg.Role)
	}
}

// argumentsText is the wire form of a tool call's arguments: the raw JSON,
// "{}" when empty, and the original text when the arguments were not valid
// JSON and toolArguments stored them as a JSON string.
func argumentsText(args json.RawMessage) string {
	args = bytes.TrimSpace(args)
	if len(args) == 0 || string(args) == "null" {
		return "{}"
	}
	if args[0] == '"' {
		var s string
		if json.Unmarshal(args, &s) == nil {
			return s
		}
	}
	return string(args)
}

// toolArguments turns the arguments text a model produced into a
// json.RawMessage that is always valid JSON: "{}" when empty, the text
// itself when it is valid JSON, and otherwise the text as a JSON string, so
// that schema validation rejects it and the model is told.
func toolArguments(s string) json.RawMessage {
	t := strings.TrimSpace(s)
	if t == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	b, _ := json.Marshal(s)
	return b
}

// newCallID makes an id for a tool call the server sent without one.
func newCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}

// finishReason maps the SDK's finish reason; an empty one becomes
// tool_calls when the reply has tool calls.
func finishReason(r sdk.FinishReason, hasToolCalls bool) llm.FinishReason {
	switch r {
	case sdk.FinishReasonStop:
		return llm.FinishStop
	case sdk.FinishReasonToolCalls, sdk.FinishReasonFunctionCall:
		return llm.FinishToolCalls
	case sdk.FinishReasonLength:
		return llm.FinishLength
	case sdk.FinishReasonContentFilter:
		return llm.FinishContentFilter
	case "", sdk.FinishReasonNull:
		if hasToolCalls {
			return llm.FinishToolCalls
		}
		return ""
	default:
		return llm.FinishReason(r)
	}
}

// convertUsage maps the SDK's usage. A count below zero, which a buggy
// server may send, becomes 0 (it would lower the run's usage and cost),
// and the cached and reasoning parts never exceed their totals, as
// llm.Usage documents them.
func convertUsage(u sdk.Usage) llm.Usage {
	out := llm.Usage{InputTokens: max(u.PromptTokens, 0), OutputTokens: max(u.CompletionTokens, 0)}
	if u.PromptTokensDetails != nil {
		out.CachedTokens = min(max(u.PromptTokensDetails.CachedTokens, 0), out.InputTokens)
	}
	if u.CompletionTokensDetails != nil {
		out.ReasoningTokens = min(max(u.CompletionTokensDetails.ReasoningTokens, 0), out.OutputTokens)
	}
	return out
}

// rawReasoning holds the "reasoning" field some servers (Ollama, recent
// vLLM, OpenRouter) send instead of DeepSeek's "reasoning_content", which
// is the only one go-openai decodes.
type rawReasoning struct {
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Reasoning string `json:"reasoning"`
		} `json:"message"`
		Delta struct {
			Reasoning string `json:"reasoning"`
		} `json:"delta"`
	} `json:"choices"`
}

var reasoningKey = []byte(`"reasoning"`)

// extraReasoning returns the "reasoning" text of choice 0 in a raw response
// or chunk, or "" when there is none.
func extraReasoning(raw []byte) string {
	if !bytes.Contains(raw, reasoningKey) {
		return ""
	}
	var r rawReasoning
	if json.Unmarshal(raw, &r) != nil {
		return ""
	}
	for _, c := range r.Choices {
		if c.Index == 0 {
			return c.Message.Reasoning + c.Delta.Reasoning
		}
	}
	return ""
}

// convertReply maps a non-streamed response to a Reply.
func convertReply(resp *sdk.ChatCompletionResponse, raw []byte) (*llm.Reply, error) {
	var choice *sdk.ChatCompletionChoice
	for i := range resp.Choices {
		if resp.Choices[i].Index == 0 {
			choice = &resp.Choices[i]
			break
		}
	}
	if choice == nil {
		return nil, fmt.Errorf("response %q has no choices", resp.ID)
	}
	if len(choice.Message.MultiContent) > 0 && choice.Message.Content == "" {
		// The content is an array of parts, which go-openai keeps apart.
		if flat, ok := flattenContentParts(raw); ok {
			var again sdk.ChatCompletionResponse
			if json.Unmarshal(flat, &again) == nil {
				return convertReply(&again, flat)
			}
		}
	}
	if choice.FinishReason == finishError {
		return nil, ErrReplyFailed
	}
	msg := defs.Message{
		Role:      defs.RoleAssistant,
		Content:   choice.Message.Content,
		Reasoning: choice.Message.ReasoningContent,
	}
	if msg.Content == "" {
		msg.Content = choice.Message.Refusal
	}
	if msg.Reasoning == "" {
		msg.Reasoning = extraReasoning(raw)
	}
	for _, tc := range choice.Message.ToolCalls {
		if tc.Type != "" && tc.Type != sdk.ToolTypeFunction {
			continue
		}
		id := tc.ID
		if id == "" {
			id = newCallID()
		}
		msg.ToolCalls = append(msg.ToolCalls, defs.ToolCall{ID: id, Name: tc.Function.Name, Arguments: toolArguments(tc.Function.Arguments)})
	}
	if len(msg.ToolCalls) == 0 && choice.Message.FunctionCall != nil {
		fc := choice.Message.FunctionCall
		msg.ToolCalls = append(msg.ToolCalls, defs.ToolCall{ID: newCallID(), Name: fc.Name, Arguments: toolArguments(fc.Arguments)})
	}
	return &llm.Reply{
		Message:      msg,
		Usage:        convertUsage(resp.Usage),
		FinishReason: finishReason(choice.FinishReason, len(msg.ToolCalls) > 0),
		ID:           resp.ID,
		Refusal:      choice.Message.Refusal,
	}, nil
}
