package anthropic

import (
	"context"
	"encoding/json"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
)

// replyOf maps a message of the API to the runtime's reply: text blocks
// joined as Content, thinking blocks joined as Reasoning and kept whole
// in Meta[MetaThinking], tool_use blocks as ToolCalls in order, the stop
// reason mapped, and the usage with cache reads and writes counted in
// InputTokens (the API counts them apart).
func replyOf(msg *sdk.Message) *llm.Reply {
	r := &llm.Reply{ID: msg.ID, Message: defs.Message{Role: defs.RoleAssistant}}
	var text, reasoning []string
	var thinking []thinkingBlock
	for i := range msg.Content {
		b := &msg.Content[i]
		switch b.Type {
		case "text":
			text = append(text, b.Text)
		case "thinking":
			reasoning = append(reasoning, b.Thinking)
			thinking = append(thinking, thinkingBlock{Type: b.Type, Thinking: b.Thinking, Signature: b.Signature})
		case "redacted_thinking":
			thinking = append(thinking, thinkingBlock{Type: b.Type, Data: b.Data})
		case "tool_use":
			args := b.Input
			if len(args) == 0 {
				args = json.RawMessage(`{}`)
			}
			r.Message.ToolCalls = append(r.Message.ToolCalls, defs.ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		}
	}
	r.Message.Content = strings.Join(text, "")
	r.Message.Reasoning = strings.Join(reasoning, "\n\n")
	if len(thinking) > 0 {
		data, _ := json.Marshal(thinking) // strings only: cannot fail
		r.Message.Meta = map[string]string{MetaThinking: string(data)}
	}
	r.FinishReason = finishReason(msg.StopReason)
	if msg.StopReason == sdk.StopReasonRefusal {
		r.Refusal = r.Message.Content
		if r.Refusal == "" {
			r.Refusal = "the model declined to answer (stop_reason refusal)"
		}
	}
	u := msg.Usage
	r.Usage = llm.Usage{
		InputTokens:        int(u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens),
		OutputTokens:       int(u.OutputTokens),
		CachedTokens:       int(u.CacheReadInputTokens),
		ReasoningTokens:    int(u.OutputTokensDetails.ThinkingTokens),
		CacheWriteTokens:   int(u.CacheCreationInputTokens),
		CacheWrite1hTokens: int(u.CacheCreation.Ephemeral1hInputTokens),
	}
	return r
}

// finishReason maps the API's stop reasons: end_turn and stop_sequence
// are FinishStop, tool_use FinishToolCalls, max_tokens and
// model_context_window_exceeded FinishLength, refusal
// FinishContentFilter; another (pause_turn) is passed on as it is.
func finishReason(s sdk.StopReason) llm.FinishReason {
	switch s {
	case sdk.StopReasonEndTurn, sdk.StopReasonStopSequence:
		return llm.FinishStop
	case sdk.StopReasonToolUse:
		return llm.FinishToolCalls
	case sdk.StopReasonMaxTokens, sdk.StopReasonModelContextWindowExceeded:
		return llm.FinishLength
	case sdk.StopReasonRefusal:
		return llm.FinishContentFilter
	}
	return llm.FinishReason(s)
}

// streamOnce makes one streamed attempt: it delivers deltas as events
// arrive and assembles the message with the SDK's Accumulate.
func (m *Model) streamOnce(ctx context.Context, body option.RequestOption, onDelta func(llm.Delta)) (*llm.Reply, bool, error) {
	stream := m.client.Messages.NewStreaming(ctx, m.stub, body)
	defer stream.Close()
	var msg sdk.Message
	delivered, stopped := false, false
	tools := map[int64]int{} // content block index → tool call index
	deliver := func(d llm.Delta) {
		delivered = true
		onDelta(d)
	}
	for stream.Next() {
		ev := stream.Current()
		if err := msg.Accumulate(ev); err != nil {
			return nil, delivered, err
		}
		switch ev.Type {
		case "content_block_start":
			if cb := ev.ContentBlock; cb.Type == "tool_use" {
				i := len(tools)
				tools[ev.Index] = i
				deliver(llm.Delta{ToolCall: &llm.ToolCallDelta{Index: i, ID: cb.ID, Name: cb.Name}})
			}
		case "content_block_delta":
			switch d := ev.Delta; d.Type {
			case "text_delta":
				if d.Text != "" {
					deliver(llm.Delta{Content: d.Text})
				}
			case "thinking_delta":
				if d.Thinking != "" {
					deliver(llm.Delta{Reasoning: d.Thinking})
				}
			case "input_json_delta":
				if i, ok := tools[ev.Index]; ok && d.PartialJSON != "" {
					deliver(llm.Delta{ToolCall: &llm.ToolCallDelta{Index: i, Arguments: d.PartialJSON}})
				}
			}
		case "message_stop":
			stopped = true
		}
	}
	if err := stream.Err(); err != nil {
		return nil, delivered, err
	}
	if !stopped {
		return nil, delivered, ErrStreamCut
	}
	return replyOf(&msg), delivered, nil
}
