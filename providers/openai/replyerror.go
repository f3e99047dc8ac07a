package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	sdk "github.com/sashabaranov/go-openai"

	"github.com/reprompt/reprompt/llm"
)

// ErrReplyFailed is wrapped by the *llm.ModelError returned when a
// server ends a reply with finish_reason "error" (OpenRouter does when the
// upstream provider fails mid-reply) without saying more. The partial reply
// is dropped. Such an error is retryable.
var ErrReplyFailed = errors.New(`openai: the server ended the reply with finish_reason "error"`)

var errorKey = []byte(`"error"`)

// replyError returns the error a successful (2xx) response body or stream
// chunk carries at its top level, or nil: some proxies answer 200 with
// {"error":…}, and OpenRouter sends a chunk with an "error" beside its
// choices when the upstream provider fails mid-stream. An error object in
// OpenAI's shape becomes an *openai.APIError whose status is the one it
// names (0 when none); any other becomes an *openai.RequestError carrying
// the payload, as go-openai reports a failed response.
func replyError(raw []byte, status int) error {
	if !bytes.Contains(raw, errorKey) {
		return nil
	}
	var top struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(raw, &top) != nil {
		return nil
	}
	payload := bytes.TrimSpace(top.Error)
	if len(payload) == 0 || string(payload) == "null" || string(payload) == `""` || string(payload) == "{}" {
		return nil
	}
	if payload[0] == '{' {
		var api sdk.APIError
		if json.Unmarshal(payload, &api) == nil && api.Message != "" {
			api.HTTPStatusCode = statusInBody(raw)
			if api.HTTPStatusCode != 0 {
				api.HTTPStatus = fmt.Sprintf("%d %s", api.HTTPStatusCode, http.StatusText(api.HTTPStatusCode))
			}
			return &api
		}
	}
	return &sdk.RequestError{
		HTTPStatus:     fmt.Sprintf("%d %s", status, http.StatusText(status)),
		HTTPStatusCode: status,
		Err:            errors.New("openai: the server sent an error in a successful response"),
		Body:           bytes.Clone(raw),
	}
}

// finishError is the finish_reason OpenRouter gives a reply that failed.
const finishError sdk.FinishReason = "error"

// wholeReply reads the whole JSON reply a server sent to a stream request
// (it ignored "stream": true), and delivers its parts as deltas.
func wholeReply(ex *exchange, onDelta func(llm.Delta)) (*llm.Reply, bool, error) {
	if err := replyError(ex.raw, ex.status); err != nil {
		return nil, false, err
	}
	raw := ex.raw
	var resp sdk.ChatCompletionResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		resp = sdk.ChatCompletionResponse{}
		flat, ok := flattenContentParts(raw)
		if !ok || json.Unmarshal(flat, &resp) != nil {
			return nil, false, fmt.Errorf("openai: the server answered a stream request with JSON that is not a reply (%w): %s", err, bodyText(raw))
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

// undecodable is the error for a 2xx body go-openai could not decode: it
// shows the body, and an empty one (a proxy that lost it) is retryable.
func undecodable(ex *exchange, err error) error {
	if len(bytes.TrimSpace(ex.raw)) == 0 {
		return fmt.Errorf("openai: the server answered %d %s with an empty body: %w", ex.status, http.StatusText(ex.status), io.ErrUnexpectedEOF)
	}
	return fmt.Errorf("openai: the body of the %d reply is not a chat completion (%w): %s", ex.status, err, bodyText(ex.raw))
}
