package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	sdk "github.com/sashabaranov/go-openai"

	"github.com/reprompt/reprompt/internal/httpwait"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/providers/openai/internal/wire"
)

// ErrStreamCut is wrapped by the *llm.ModelError returned when a stream
// ends before the server said why the reply ended (no finish_reason). Such
// an error is retryable.
var ErrStreamCut = wire.ErrStreamCut

// ErrReplyFailed is wrapped by the *llm.ModelError returned when a
// server ends a reply with finish_reason "error" (OpenRouter does when the
// upstream provider fails mid-reply) without saying more. The partial reply
// is dropped. Such an error is retryable.
var ErrReplyFailed = wire.ErrReplyFailed

// ReplyTooLargeError is wrapped by the *llm.ModelError returned when a
// response body exceeds Config.MaxReplyBytes. Such an error is not
// retryable.
type ReplyTooLargeError struct {
	// Limit is the cap that was reached, in bytes.
	Limit int64
	// Streamed reports whether the reply was a stream.
	Streamed bool
}

func (e *ReplyTooLargeError) Error() string {
	kind := "reply"
	if e.Streamed {
		kind = "streamed reply"
	}
	return fmt.Sprintf("openai: %s larger than MaxReplyBytes (%d bytes)", kind, e.Limit)
}

// classify turns any failure of a call into an *llm.ModelError whose Err
// is the original error, so errors.As still finds *openai.APIError or
// *openai.RequestError from go-openai. ctx is the call's context: a failure
// caused by its cancellation is not retryable and unwraps to ctx.Err().
func classify(ctx context.Context, err error) *llm.ModelError {
	var me *llm.ModelError
	if errors.As(err, &me) {
		return me
	}
	if ctx.Err() != nil {
		if !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return &llm.ModelError{Message: err.Error(), Err: err}
	}

	if errors.Is(err, ErrReplyFailed) {
		return &llm.ModelError{Message: err.Error(), Retryable: true, Err: err}
	}

	if tl, ok := errors.AsType[*ReplyTooLargeError](err); ok {
		return &llm.ModelError{Message: tl.Error(), Err: err}
	}

	// A failed response whose body is not OpenAI's shape, or an error
	// event go-openai could not decode. Checked before *APIError: when a
	// body's "error" is a string, go-openai leaves an empty *APIError
	// inside the *RequestError.
	var reqErr *sdk.RequestError
	if errors.As(err, &reqErr) {
		status := reqErr.HTTPStatusCode
		if status < 400 {
			// An error event inside a stream that began with 200: the
			// status is whatever the event names. An event that is a
			// bare JSON string naming none is taken for a failure of the
			// server or of a proxy before it, 502 Bad Gateway, and
			// retried as one.
			status = wire.StatusInBody(reqErr.Body)
			if status == 0 && errors.Is(reqErr, wire.ErrStringEvent) {
				status = http.StatusBadGateway
			}
		}
		msg := wire.BodyText(reqErr.Body)
		if msg == "" {
			msg = reqErr.HTTPStatus
		}
		if msg == "" {
			msg = fmt.Sprintf("%d %s", status, http.StatusText(status))
		}
		e := &llm.ModelError{
			StatusCode:     status,
			Message:        msg,
			Retryable:      status != 0 && retryableStatus(status),
			ContextTooLong: status != 0 && status < 500 && status != http.StatusTooManyRequests && contextTooLong("", "", msg),
			Err:            err,
		}
		if e.ContextTooLong {
			e.Retryable = false
		}
		return e
	}

	var apiErr *sdk.APIError
	if errors.As(err, &apiErr) {
		code := fmt.Sprint(apiErr.Code)
		if apiErr.Code == nil {
			code = ""
		}
		msg := apiErr.Message
		if msg == "" {
			msg = strings.TrimSpace(apiErr.Type + " " + code)
		}
		status := apiErr.HTTPStatusCode
		if status == 0 {
			// An error event inside a stream carries no status: the one
			// OpenAI answers its code with (429 for rate_limit_exceeded).
			status = wire.StatusOfCode(code, apiErr.Type)
		}
		e := &llm.ModelError{
			StatusCode:     status,
			Message:        msg,
			ContextTooLong: contextTooLong(code, apiErr.Type, apiErr.Message),
			Err:            err,
		}
		switch {
		case code == "insufficient_quota" || apiErr.Type == "insufficient_quota":
			e.Retryable = false
		case e.StatusCode != 0:
			e.Retryable = retryableStatus(e.StatusCode)
		default:
			// An error event inside a stream carries no status.
			e.Retryable = apiErr.Type == "server_error" || code == "server_error" || code == "rate_limit_exceeded" || apiErr.Type == "overloaded_error"
		}
		if e.StatusCode == http.StatusTooManyRequests || e.StatusCode >= 500 {
			e.ContextTooLong = false
		}
		if e.ContextTooLong {
			e.Retryable = false
		}
		return e
	}

	return &llm.ModelError{Message: err.Error(), Retryable: errors.Is(err, ErrStreamCut) || httpwait.Transient(err), Err: err}
}

// retryableStatus reports whether an HTTP status is worth another attempt,
// as the official SDKs decide it.
func retryableStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusConflict ||
		code == http.StatusTooManyRequests || code >= 500
}

// contextTooLong recognises the ways servers say a request does not fit the
// model's context window: OpenAI's code, llama.cpp's error type, and the
// messages of vLLM, Ollama, xAI, Gemini, TGI and others.
func contextTooLong(code, typ, msg string) bool {
	switch code {
	case "context_length_exceeded", "string_above_max_length":
		return true
	}
	if typ == "exceed_context_size_error" {
		return true
	}
	m := strings.ToLower(msg)
	for _, s := range []string{
		"context_length_exceeded",
		"maximum context length",
		"context length exceeded",
		"exceeds the context window",
		"exceeds the context length",
		"exceeds the available context size",
		"exceed_context_size",
		"prompt is too long",
		"too many tokens",
		"input is too long",
		"maximum prompt length",                // xAI
		"input token count",                    // Gemini: "The input token count (N) exceeds the maximum…"
		"tokens + `max_new_tokens` must be <=", // Hugging Face TGI
	} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}
