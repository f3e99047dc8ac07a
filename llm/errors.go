package llm

import (
	"errors"
	"fmt"
)

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

// Error says the status, when there is one, whether the error is
// retryable, and the provider's message (or, without one, Err's).
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

// Unwrap returns Err, the provider's own error.
func (e *ModelError) Unwrap() error { return e.Err }

// IsRetryable reports whether err is, or wraps, a retryable *ModelError.
func IsRetryable(err error) bool {
	var me *ModelError
	return errors.As(err, &me) && me.Retryable
}

// RequestError is a request that providers would reject, found before it is
// sent: a tool result without the call it answers, a call without its
// result, a role out of place.
type RequestError struct {
	// Index is the position of the offending message in Request.Messages.
	Index  int
	Reason string
}

// Error names the offending message by its index, and the reason.
func (e *RequestError) Error() string {
	return fmt.Sprintf("invalid request: message %d: %s", e.Index, e.Reason)
}
