package anthropic

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/reprompt/reprompt/internal/httpwait"
	"github.com/reprompt/reprompt/llm"
)

// ErrStreamCut is wrapped by the *llm.ModelError returned when a stream
// ends before message_stop. Such an error is retryable.
var ErrStreamCut = errors.New("anthropic: stream ended before message_stop")

// StatusOverloaded is the HTTP status Anthropic answers when its servers
// are overloaded (overloaded_error). It is retried.
const StatusOverloaded = 529

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
	return fmt.Sprintf("anthropic: %s larger than MaxReplyBytes (%d bytes)", kind, e.Limit)
}

// classify turns any failure of an attempt into an *llm.ModelError whose
// Err is the original error, so errors.As still finds the SDK's
// *anthropic.Error. ctx is the call's context: a failure caused by its
// end is not retryable and unwraps to ctx.Err(). ex is what the attempt's
// response showed, which keeps the status of an error whose body the SDK
// could not read or parse.
func classify(ctx context.Context, err error, ex *exchange) *llm.ModelError {
	if me, ok := errors.AsType[*llm.ModelError](err); ok {
		return me
	}
	if ctx.Err() != nil {
		if !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return &llm.ModelError{Message: err.Error(), Err: err}
	}
	if tl, ok := errors.AsType[*ReplyTooLargeError](err); ok {
		return &llm.ModelError{StatusCode: ex.status, Message: tl.Error(), Err: err}
	}
	if errors.Is(err, ErrStreamCut) {
		return &llm.ModelError{Message: err.Error(), Retryable: true, Err: err}
	}

	if apiErr, ok := errors.AsType[*sdk.Error](err); ok {
		status, typ := apiErr.StatusCode, string(apiErr.Type())
		if status < 400 {
			// An error event inside a stream that began with 200: the
			// status is the one its type stands for.
			status = statusOfType(typ)
		}
		msg := apiErr.Message
		if msg == "" {
			msg = strings.TrimSpace(apiErr.RawJSON())
		}
		if msg == "" {
			msg = fmt.Sprintf("%d %s", status, statusText(status))
		}
		if typ != "" {
			msg = typ + ": " + msg
		}
		e := &llm.ModelError{StatusCode: status, Message: msg, Err: err}
		e.Retryable = retryableStatus(status)
		if apiErr.Response != nil {
			switch apiErr.Response.Header.Get("x-should-retry") {
			case "true":
				e.Retryable = true
			case "false":
				e.Retryable = false
			}
		}
		if (status == http.StatusBadRequest || status == http.StatusRequestEntityTooLarge) && contextTooLong(apiErr.Message) {
			e.ContextTooLong, e.Retryable = true, false
		}
		return e
	}

	if ex.status >= 400 {
		// An error response whose body the SDK could not read or decode.
		msg := fmt.Sprintf("%d %s: %v", ex.status, statusText(ex.status), err)
		return &llm.ModelError{StatusCode: ex.status, Message: msg, Retryable: retryableStatus(ex.status), Err: err}
	}
	return &llm.ModelError{Message: err.Error(), Retryable: httpwait.Transient(err), Err: err}
}

// statusText is http.StatusText, which knows 529 too.
func statusText(code int) string {
	if code == StatusOverloaded {
		return "Overloaded"
	}
	return http.StatusText(code)
}

// statusOfType returns the HTTP status Anthropic answers with an error of
// type typ, for error events inside a stream; 0 for an unknown type.
func statusOfType(typ string) int {
	switch typ {
	case "invalid_request_error":
		return http.StatusBadRequest
	case "authentication_error":
		return http.StatusUnauthorized
	case "billing_error":
		return http.StatusPaymentRequired
	case "permission_error":
		return http.StatusForbidden
	case "not_found_error":
		return http.StatusNotFound
	case "request_too_large":
		return http.StatusRequestEntityTooLarge
	case "rate_limit_error":
		return http.StatusTooManyRequests
	case "api_error":
		return http.StatusInternalServerError
	case "timeout_error":
		return http.StatusGatewayTimeout
	case "overloaded_error":
		return StatusOverloaded
	}
	return 0
}

// retryableStatus reports whether an HTTP status is worth another attempt,
// as the official SDKs decide it (529 is a 5xx).
func retryableStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusConflict ||
		code == http.StatusTooManyRequests || code >= 500
}

// contextTooLong recognises Anthropic's ways of saying that a request does
// not fit the model's context window ("prompt is too long: 201234 tokens >
// 200000 maximum", "input length and `max_tokens` exceed context limit").
func contextTooLong(msg string) bool {
	m := strings.ToLower(msg)
	for _, s := range []string{
		"prompt is too long",
		"exceed context limit",
		"exceeds the context window",
		"context window",
		"context length",
		"too many tokens",
	} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}
