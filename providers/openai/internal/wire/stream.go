package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	sdk "github.com/sashabaranov/go-openai"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
)

// ErrStreamCut is the error of a stream that ends before the server said
// why the reply ended (openai.ErrStreamCut).
var ErrStreamCut = errors.New("openai: stream ended before the reply was complete")

// Generate makes one attempt of a non-streamed request through client,
// sending ex.Body and recording the exchange in ex.
func Generate(ctx context.Context, client *sdk.Client, model string, ex *Exchange) (*llm.Reply, error) {
	ctx = context.WithValue(ctx, exchangeKey{}, ex)
	resp, err := client.CreateChatCompletion(ctx, sdk.ChatCompletionRequest{Model: model})
	if err != nil {
		if ex.raw != nil && ctx.Err() == nil {
			// The body arrived whole (ex.raw) but go-openai could not
			// decode it.
			if err := replyError(ex.raw, ex.Status); err != nil {
				return nil, err
			}
			var again sdk.ChatCompletionResponse
			if flat, ok := flattenContentParts(ex.raw); ok && json.Unmarshal(flat, &again) == nil {
				return convertReply(&again, flat)
			}
			return nil, undecodable(ex, err)
		}
		return nil, err
	}
	if err := replyError(ex.raw, ex.Status); err != nil {
		return nil, err
	}
	return convertReply(&resp, ex.raw)
}

// Stream makes one attempt of a streamed request through client, sending
// ex.Body and recording the exchange in ex; it calls onDelta for each
// fragment as it arrives. delivered reports whether onDelta was called,
// which forbids a retry.
func Stream(ctx context.Context, client *sdk.Client, model string, ex *Exchange, onDelta func(llm.Delta)) (reply *llm.Reply, delivered bool, err error) {
	ctx = context.WithValue(ctx, exchangeKey{}, ex)
	stream, err := client.CreateChatCompletionStream(ctx, sdk.ChatCompletionRequest{Model: model})
	if err != nil {
		return nil, false, err
	}
	defer stream.Close()
	// The transport aborts a read when ctx ends; closing the body as well
	// makes sure a blocked read returns whatever the HTTP client is.
	stop := context.AfterFunc(ctx, func() { stream.Close() })
	defer stop()

	acc := newStreamAcc()
	for {
		raw, err := stream.RecvRaw()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, delivered, err
		}
		if raw == nil {
			// go-openai read an error event it could not decode (its
			// "error" is not an object) and returned neither data nor
			// an error.
			return nil, delivered, streamEventError(ex)
		}
		if err := replyError(raw, ex.Status); err != nil {
			return nil, delivered, err
		}
		if _, ok := jsonString(raw); ok {
			return nil, delivered, stringEventError(ex, raw)
		}
		var chunk sdk.ChatCompletionStreamResponse
		if err := json.Unmarshal(raw, &chunk); err != nil {
			chunk = sdk.ChatCompletionStreamResponse{}
			flat, ok := flattenContentParts(raw)
			if !ok || json.Unmarshal(flat, &chunk) != nil {
				return nil, delivered, fmt.Errorf("openai: a stream event is not a chunk (%w): %s", err, BodyText(raw))
			}
			raw = flat
		}
		for _, d := range acc.add(&chunk, raw) {
			delivered = true
			onDelta(d)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, delivered, err
	}
	if ex.tap != nil && ex.tap.errEvent != nil {
		// The stream ended after an error event go-openai could not
		// decode.
		return nil, delivered, streamEventError(ex)
	}
	if ex.whole {
		return wholeReply(ex, onDelta)
	}
	if !acc.finished {
		return nil, delivered, ErrStreamCut
	}
	if acc.finish == finishError {
		return nil, delivered, ErrReplyFailed
	}
	return acc.reply(), delivered, nil
}

// streamEventError is the error for an error event of a stream that
// go-openai could not decode, as a *openai.RequestError carrying the
// event's payload, so that openai's classify reads its status and text.
func streamEventError(ex *Exchange) error {
	payload := []byte("(an error event that could not be read)")
	if ex != nil && ex.tap != nil && ex.tap.errEvent != nil {
		payload = ex.tap.errEvent
	}
	status := http.StatusOK
	if ex != nil && ex.Status != 0 {
		status = ex.Status
	}
	return &sdk.RequestError{
		HTTPStatus:     fmt.Sprintf("%d %s", status, http.StatusText(status)),
		HTTPStatusCode: status,
		Err:            errors.New("openai: the stream sent an error event that is not in OpenAI's shape"),
		Body:           payload,
	}
}

// ErrStringEvent is the error of a *openai.RequestError made of a stream
// event whose data is a JSON string (data: "Service Unavailable"): no
// chunk is a string, and @dwmkerr/mock-llm sends every error scripted for
// a streaming client so, inside a stream that began with 200.
var ErrStringEvent = errors.New("openai: the stream sent an event that is a JSON string, not a chunk: taken for an error")

// stringEventError is the error for a stream event whose data is a JSON
// string, as a *openai.RequestError with the response's status (2xx)
// carrying the event, so that openai's classify reads its text and the
// status it names.
func stringEventError(ex *Exchange, raw []byte) error {
	status := http.StatusOK
	if ex != nil && ex.Status != 0 {
		status = ex.Status
	}
	return &sdk.RequestError{
		HTTPStatus:     fmt.Sprintf("%d %s", status, http.StatusText(status)),
		HTTPStatusCode: status,
		Err:            ErrStringEvent,
		Body:           bytes.Clone(raw),
	}
}

// streamAcc assembles a reply from stream chunks.
type streamAcc struct {
	content, reasoning, refusal strings.Builder
	calls                       map[int]*callAcc
	slots                       map[int]int // server index → slot in calls now receiving its fragments
	lastIndex                   int
	finish                      sdk.FinishReason
	finished                    bool
	usage                       llm.Usage
	id                          string // the response id, from the first chunk that has one
}

type callAcc struct {
	index    int
	id, name string
	args     strings.Builder
}

func newStreamAcc() *streamAcc {
	return &streamAcc{calls: map[int]*callAcc{}, slots: map[int]int{}, lastIndex: -1}
}

// add folds chunk, decoded from raw, into the reply and returns the
// deltas it carries. raw holds what go-openai does not decode: the
// "reasoning" field and the cache writes of the usage.
func (a *streamAcc) add(chunk *sdk.ChatCompletionStreamResponse, raw []byte) []llm.Delta {
	if chunk.Usage != nil {
		a.usage = convertUsage(*chunk.Usage, raw)
	}
	var reasoning string
	if len(chunk.Choices) > 0 {
		reasoning = extraReasoning(raw)
	}
	if a.id == "" {
		a.id = chunk.ID
	}
	var out []llm.Delta
	for _, ch := range chunk.Choices {
		if ch.Index != 0 {
			continue
		}
		d := ch.Delta
		text := d.ReasoningContent
		if text == "" {
			text = reasoning
		}
		if d.Content != "" || text != "" {
			a.content.WriteString(d.Content)
			a.reasoning.WriteString(text)
			out = append(out, llm.Delta{Content: d.Content, Reasoning: text})
		}
		a.refusal.WriteString(d.Refusal)
		for _, tc := range d.ToolCalls {
			c := a.call(tc)
			if tc.ID != "" {
				c.id = tc.ID
			}
			if tc.Function.Name != "" {
				c.name = tc.Function.Name
			}
			c.args.WriteString(tc.Function.Arguments)
			out = append(out, llm.Delta{ToolCall: &llm.ToolCallDelta{
				Index: c.index, ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments,
			}})
		}
		if fc := d.FunctionCall; fc != nil {
			c := a.call(sdk.ToolCall{Index: new(0)})
			if fc.Name != "" {
				c.name = fc.Name
			}
			c.args.WriteString(fc.Arguments)
			out = append(out, llm.Delta{ToolCall: &llm.ToolCallDelta{Index: 0, Name: fc.Name, Arguments: fc.Arguments}})
		}
		if ch.FinishReason != "" && ch.FinishReason != sdk.FinishReasonNull {
			a.finish = ch.FinishReason
			a.finished = true
		}
	}
	return out
}

// call finds the accumulator for a tool-call fragment: by index when the
// server sends one, else by id, else the last call.
func (a *streamAcc) call(tc sdk.ToolCall) *callAcc {
	idx := -1
	switch {
	case tc.Index != nil:
		// Some servers (Ollama) send index 0 for every call of a parallel
		// batch: a fragment with a new id at a used index starts a new call,
		// and later fragments of that index go to it.
		idx = *tc.Index
		if slot, ok := a.slots[idx]; ok {
			idx = slot
		}
		if c, ok := a.calls[idx]; ok && tc.ID != "" && c.id != "" && c.id != tc.ID {
			next := 0
			for i := range a.calls {
				next = max(next, i+1)
			}
			a.slots[*tc.Index] = next
			idx = next
		}
	case tc.ID != "":
		for i, c := range a.calls {
			if c.id == tc.ID {
				idx = i
			}
		}
		if idx < 0 {
			idx = len(a.calls)
		}
	default:
		idx = max(a.lastIndex, 0)
	}
	a.lastIndex = idx
	c, ok := a.calls[idx]
	if !ok {
		c = &callAcc{index: idx}
		a.calls[idx] = c
	}
	return c
}

func (a *streamAcc) reply() *llm.Reply {
	msg := defs.Message{Role: defs.RoleAssistant, Content: a.content.String(), Reasoning: a.reasoning.String()}
	if msg.Content == "" {
		msg.Content = a.refusal.String()
	}
	idx := make([]int, 0, len(a.calls))
	for i := range a.calls {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		c := a.calls[i]
		id := c.id
		if id == "" {
			id = newCallID()
		}
		msg.ToolCalls = append(msg.ToolCalls, defs.ToolCall{ID: id, Name: c.name, Arguments: ToolArguments(c.args.String())})
	}
	return &llm.Reply{Message: msg, Usage: a.usage, FinishReason: finishReason(a.finish, len(msg.ToolCalls) > 0), ID: a.id, Refusal: a.refusal.String()}
}

// wholeReply reads the whole JSON reply a server sent to a stream request
// (it ignored "stream": true), and delivers its parts as deltas.
func wholeReply(ex *Exchange, onDelta func(llm.Delta)) (*llm.Reply, bool, error) {
	if err := replyError(ex.raw, ex.Status); err != nil {
		return nil, false, err
	}
	raw := ex.raw
	var resp sdk.ChatCompletionResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		resp = sdk.ChatCompletionResponse{}
		flat, ok := flattenContentParts(raw)
		if !ok || json.Unmarshal(flat, &resp) != nil {
			return nil, false, fmt.Errorf("openai: the server answered a stream request with JSON that is not a reply (%w): %s", err, BodyText(raw))
		}
		raw = flat
	}
	reply, err := convertReply(&resp, raw)
	if err != nil {
		return nil, false, err
	}
	msg := reply.Message
	delivered := false
	if msg.Content != "" || msg.Reasoning != "" {
		delivered = true
		onDelta(llm.Delta{Content: msg.Content, Reasoning: msg.Reasoning})
	}
	for i, c := range msg.ToolCalls {
		delivered = true
		onDelta(llm.Delta{ToolCall: &llm.ToolCallDelta{Index: i, ID: c.ID, Name: c.Name, Arguments: argumentsText(c.Arguments)}})
	}
	return reply, delivered, nil
}
