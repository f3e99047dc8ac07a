package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
)

// MetaThinking is the key of defs.Message.Meta under which a reply keeps
// its thinking blocks as the API returned them (a JSON array of
// {"type":"thinking","thinking":…,"signature":…} and
// {"type":"redacted_thinking","data":…} objects, in order). The adapter
// sends them back at the head of that assistant message, as the API
// requires of the turn a tool result answers; Reasoning holds the same
// thinking text, for the record.
const MetaThinking = "anthropic.thinking"

// maxBreakpoints is the number of cache_control markers the API accepts
// in one request.
const maxBreakpoints = 4

// thinkingBlock is one entry of Meta[MetaThinking].
type thinkingBlock struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`
}

// turn is one message of the request: consecutive messages of one role
// merged, as the API requires alternating roles.
type turn struct {
	assistant bool
	blocks    []sdk.ContentBlockParamUnion
}

// params returns the request parameters of req. Its errors are
// *llm.ModelError, not retryable.
func (m *Model) params(req *llm.Request) (sdk.MessageNewParams, error) {
	p, first, err := m.frame(req)
	if err != nil {
		return p, err
	}
	turns, err := turnsOf(req.Messages[first:], first)
	if err != nil {
		return p, m.requestError(err)
	}
	m.placeBreakpoints(&p, turns, req, endsOf(req.Messages, req.Repeated, req.Committed))
	p.Messages = make([]sdk.MessageParam, len(turns))
	for i, t := range turns {
		if t.assistant {
			p.Messages[i] = sdk.NewAssistantMessage(t.blocks...)
		} else {
			p.Messages[i] = sdk.NewUserMessage(t.blocks...)
		}
	}
	return p, nil
}

// frame returns the request parameters of req but its messages (and cache
// breakpoints), and the index of the first message that is not part of
// the system prompt. Its errors are *llm.ModelError, not retryable.
func (m *Model) frame(req *llm.Request) (p sdk.MessageNewParams, first int, err error) {
	if p, err = m.base(req.Tools, req.Output); err != nil {
		return p, 0, err
	}
	p.System, first = systemOf(req, nil)
	return p, first, nil
}

// base returns the request parameters of the configuration, tools and
// output: those of a request but its system prompt and messages. Its
// errors are *llm.ModelError, not retryable.
func (m *Model) base(tools []llm.ToolSpec, output *llm.OutputSpec) (sdk.MessageNewParams, error) {
	p := sdk.MessageNewParams{
		Model:         sdk.Model(m.cfg.Model),
		MaxTokens:     int64(m.cfg.MaxTokens),
		StopSequences: m.cfg.StopSequences,
	}
	switch {
	case m.cfg.ThinkingBudget > 0:
		p.Thinking = sdk.ThinkingConfigParamUnion{OfEnabled: &sdk.ThinkingConfigEnabledParam{BudgetTokens: int64(m.cfg.ThinkingBudget)}}
	case m.cfg.AdaptiveThinking:
		p.Thinking = sdk.ThinkingConfigParamUnion{OfAdaptive: &sdk.ThinkingConfigAdaptiveParam{}}
	}
	if m.cfg.Effort != "" {
		p.OutputConfig.Effort = sdk.OutputConfigEffort(m.cfg.Effort)
	}
	if o := output; o != nil && o.Mode == llm.OutputNative {
		var schema map[string]any
		if err := json.Unmarshal(o.Schema, &schema); err != nil {
			return p, m.requestError(fmt.Errorf("output %q: schema: %w", o.Name, err))
		}
		p.OutputConfig.Format = sdk.JSONOutputFormatParam{Schema: schema}
	}
	for _, t := range tools {
		tp, err := toolParam(t)
		if err != nil {
			return p, m.requestError(err)
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: tp})
	}
	return p, nil
}

// systemOf appends to dst the system prompt of req: Request.System, then
// the system messages that open the transcript (blank ones left out); first
// is the index of the first message after them.
func systemOf(req *llm.Request, dst []sdk.TextBlockParam) (system []sdk.TextBlockParam, first int) {
	if req.System != "" {
		dst = append(dst, sdk.TextBlockParam{Text: req.System})
	}
	msgs := req.Messages
	for len(msgs) > 0 && msgs[0].Role == defs.RoleSystem { // a leading system message joins the system prompt
		if strings.TrimSpace(msgs[0].Content) != "" {
			dst = append(dst, sdk.TextBlockParam{Text: msgs[0].Content})
		}
		msgs = msgs[1:]
	}
	return dst, len(req.Messages) - len(msgs)
}

func (m *Model) requestError(err error) error {
	err = fmt.Errorf("anthropic: %w", err)
	return m.redact.scrub(&llm.ModelError{Message: err.Error(), Err: err})
}

// toolParam returns the tool definition of t, its JSON Schema split into
// the fields the SDK names and the rest.
func toolParam(t llm.ToolSpec) (*sdk.ToolParam, error) {
	tp := &sdk.ToolParam{Name: t.Name}
	if t.Description != "" {
		tp.Description = param.NewOpt(t.Description)
	}
	if len(bytes.TrimSpace(t.Parameters)) == 0 {
		return tp, nil
	}
	var schema map[string]any
	if err := json.Unmarshal(t.Parameters, &schema); err != nil {
		return nil, fmt.Errorf("tool %q: parameters: %w", t.Name, err)
	}
	for k, v := range schema {
		switch k {
		case "type":
		case "properties":
			tp.InputSchema.Properties = v
		case "required":
			req, ok := v.([]any)
			if !ok {
				return nil, fmt.Errorf("tool %q: parameters: required is not an array", t.Name)
			}
			for _, r := range req {
				s, ok := r.(string)
				if !ok {
					return nil, fmt.Errorf("tool %q: parameters: required holds a %T", t.Name, r)
				}
				tp.InputSchema.Required = append(tp.InputSchema.Required, s)
			}
		default:
			if tp.InputSchema.ExtraFields == nil {
				tp.InputSchema.ExtraFields = map[string]any{}
			}
			tp.InputSchema.ExtraFields[k] = v
		}
	}
	return tp, nil
}

// turnsOf maps the transcript to the API's messages: user and (after the
// leading ones) system messages as user text, tool results as tool_result
// blocks of a user message, assistant messages as their thinking blocks,
// text and tool_use blocks; consecutive messages of one role are merged,
// and empty text is left out (the API rejects it). first is the index of
// msgs[0] in the request's messages.
func turnsOf(msgs []defs.Message, first int) ([]turn, error) {
	var turns []turn
	for i := range msgs {
		blocks, assistant, err := blocksOf(&msgs[i], first+i)
		if err != nil {
			return nil, err
		}
		if len(blocks) == 0 {
			continue
		}
		if n := len(turns); n > 0 && turns[n-1].assistant == assistant {
			turns[n-1].blocks = append(turns[n-1].blocks, blocks...)
			continue
		}
		turns = append(turns, turn{assistant: assistant, blocks: blocks})
	}
	return turns, nil
}

// blocksOf returns the content blocks of msg, the i-th message of the
// request, and whether they belong to an assistant turn (see turnsOf).
func blocksOf(msg *defs.Message, i int) (blocks []sdk.ContentBlockParamUnion, assistant bool, err error) {
	switch msg.Role {
	case defs.RoleUser, defs.RoleSystem:
		if strings.TrimSpace(msg.Content) != "" {
			blocks = append(blocks, sdk.ContentBlockParamUnion{OfText: &sdk.TextBlockParam{Text: msg.Content}})
		}
	case defs.RoleTool:
		tr := &sdk.ToolResultBlockParam{ToolUseID: msg.ToolCallID}
		if msg.Content != "" {
			tr.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: msg.Content}}}
		}
		if msg.IsError {
			tr.IsError = param.NewOpt(true)
		}
		blocks = append(blocks, sdk.ContentBlockParamUnion{OfToolResult: tr})
	case defs.RoleAssistant:
		assistant = true
		if raw := msg.Meta[MetaThinking]; raw != "" {
			var tbs []thinkingBlock
			if err := json.Unmarshal([]byte(raw), &tbs); err != nil {
				return nil, false, fmt.Errorf("message %d: Meta[%q]: %w", i, MetaThinking, err)
			}
			for _, tb := range tbs {
				switch tb.Type {
				case "thinking":
					blocks = append(blocks, sdk.ContentBlockParamUnion{OfThinking: &sdk.ThinkingBlockParam{Thinking: tb.Thinking, Signature: tb.Signature}})
				case "redacted_thinking":
					blocks = append(blocks, sdk.ContentBlockParamUnion{OfRedactedThinking: &sdk.RedactedThinkingBlockParam{Data: tb.Data}})
				}
			}
		}
		if strings.TrimSpace(msg.Content) != "" {
			blocks = append(blocks, sdk.ContentBlockParamUnion{OfText: &sdk.TextBlockParam{Text: msg.Content}})
		}
		for _, c := range msg.ToolCalls {
			blocks = append(blocks, sdk.ContentBlockParamUnion{OfToolUse: &sdk.ToolUseBlockParam{ID: c.ID, Name: c.Name, Input: toolInput(c.Arguments)}})
		}
	default:
		return nil, false, fmt.Errorf("message %d: unknown role %q", i, msg.Role)
	}
	return blocks, assistant, nil
}

// toolInput returns a tool call's arguments as the API takes them: a JSON
// object; anything else (arguments cut short, not an object) is sent as {}.
func toolInput(args json.RawMessage) json.RawMessage {
	a := bytes.TrimSpace(args)
	if len(a) == 0 || a[0] != '{' || !json.Valid(a) {
		return json.RawMessage(`{}`)
	}
	return a
}

// placeBreakpoints marks the ends of the request's stable prefix with
// cache_control, at most maxBreakpoints: the end of the tools and system
// prompt (on the last system block, or the last tool without one); where
// the previous step's request had its breakpoint that this one repeats
// (req.Repeated: its end, or its committed part), or else the end of the
// previous step's request as the transcript shows it (the turn before the
// last assistant turn), so that this request reads what that one wrote
// however many blocks were added since; the end of the committed part
// (req.Committed), which no effect rewrites before the next step, for the
// next request to read even when the step rewrites what follows it; and
// the end of the transcript, which the next request reads when nothing was
// rewritten. A breakpoint falls on the last block of the messages it
// closes; ends are the last blocks of the first req.Repeated and
// req.Committed messages (endsOf).
func (m *Model) placeBreakpoints(p *sdk.MessageNewParams, turns []turn, req *llm.Request, ends [2]blockPos) {
	if m.cfg.Cache == CacheOff {
		return
	}
	cc := sdk.NewCacheControlEphemeralParam()
	if m.cfg.Cache == Cache1h {
		cc.TTL = sdk.CacheControlEphemeralTTLTTL1h
	}
	n := 0
	switch {
	case len(p.System) > 0:
		p.System[len(p.System)-1].CacheControl = cc
		n++
	case len(p.Tools) > 0:
		p.Tools[len(p.Tools)-1].OfTool.CacheControl = cc
		n++
	}
	// The marks, as the turn and the block they close, the end of the
	// transcript first.
	var marks []blockPos
	if len(turns) > 0 {
		marks = append(marks, blockPos{len(turns) - 1, len(turns[len(turns)-1].blocks) - 1})
	}
	if req.Repeated > 0 {
		marks = append(marks, ends[0])
	} else {
		for i := len(turns) - 1; i > 0; i-- {
			if turns[i].assistant {
				marks = append(marks, blockPos{i - 1, len(turns[i-1].blocks) - 1})
				break
			}
		}
	}
	if req.Committed > 0 {
		marks = append(marks, ends[1])
	}
	var done []blockPos
	for _, at := range marks {
		if n >= maxBreakpoints {
			break
		}
		if at.turn < 0 || at.turn >= len(turns) || at.block < 0 || at.block >= len(turns[at.turn].blocks) {
			continue
		}
		b := markLast(turns[at.turn].blocks[:at.block+1], cc)
		if b < 0 || slices.Contains(done, blockPos{at.turn, b}) {
			continue
		}
		done = append(done, blockPos{at.turn, b})
		n++
	}
}

// blockPos is a block of the request's messages: its turn, and its index
// in the turn.
type blockPos struct{ turn, block int }

// endsOf returns, for each of the two counts j and k, the last block of
// the first j (and k) of msgs, the request's messages, as turnsOf lays them
// out: leading system messages join the system prompt, messages with no
// block are left out, and consecutive messages of one role share a turn.
// A count whose messages have no block gets turn -1.
func endsOf(msgs []defs.Message, j, k int) [2]blockPos {
	first := 0
	for first < len(msgs) && msgs[first].Role == defs.RoleSystem {
		first++
	}
	return endsBy(len(msgs), first, j, k, func(i int) (int, bool) {
		return blockCount(&msgs[i]), msgs[i].Role == defs.RoleAssistant
	})
}

// endsBy is endsOf for n messages, of which the first are leading system
// messages, given each message's block count and whether it is the
// assistant's: the request body takes them from its cached encodings
// rather than map the messages again (which parses every assistant
// message's thinking blocks).
func endsBy(n, first, j, k int, blocks func(i int) (nb int, assistant bool)) [2]blockPos {
	ends := [2]blockPos{{-1, -1}, {-1, -1}}
	pos := blockPos{-1, -1}
	assistant := false
	for i, stop := first, min(max(j, k), n); ; i++ {
		if i == j {
			ends[0] = pos
		}
		if i == k {
			ends[1] = pos
		}
		if i >= stop {
			return ends
		}
		nb, a := blocks(i)
		if nb == 0 {
			continue
		}
		if pos.turn < 0 || a != assistant {
			pos, assistant = blockPos{pos.turn + 1, -1}, a
		}
		pos.block += nb
	}
}

// blockCount returns how many blocks turnsOf makes of msg (after the
// leading system messages).
func blockCount(msg *defs.Message) int {
	text := 0
	if strings.TrimSpace(msg.Content) != "" {
		text = 1
	}
	switch msg.Role {
	case defs.RoleTool:
		return 1
	case defs.RoleAssistant:
		n := text + len(msg.ToolCalls)
		if raw := msg.Meta[MetaThinking]; raw != "" {
			var tbs []thinkingBlock
			if json.Unmarshal([]byte(raw), &tbs) == nil {
				for _, tb := range tbs {
					if tb.Type == "thinking" || tb.Type == "redacted_thinking" {
						n++
					}
				}
			}
		}
		return n
	}
	return text
}

// markLast sets cc on the last block of blocks that takes one (thinking
// blocks do not), and returns its index, -1 if none does.
func markLast(blocks []sdk.ContentBlockParamUnion, cc sdk.CacheControlEphemeralParam) int {
	for i := len(blocks) - 1; i >= 0; i-- {
		b := &blocks[i]
		switch {
		case b.OfText != nil:
			b.OfText.CacheControl = cc
		case b.OfToolResult != nil:
			b.OfToolResult.CacheControl = cc
		case b.OfToolUse != nil:
			b.OfToolUse.CacheControl = cc
		default:
			continue
		}
		return i
	}
	return -1
}
