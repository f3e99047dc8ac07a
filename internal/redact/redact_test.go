package redact_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/reprompt/reprompt/internal/redact"
	"github.com/reprompt/reprompt/llm"
)

type sdkError struct{ msg string }

func (e *sdkError) Error() string { return e.msg }

// TestScrub: the secret leaves the message, the SDK's error (edited in
// place by the callback) and the text of the errors around it, and what
// callers look for stays reachable.
func TestScrub(t *testing.T) {
	const key = "sk-SECRET"
	sec := redact.Secret(key)
	api := &sdkError{msg: "bad key " + key}
	me := &llm.ModelError{Message: "echo " + key, Err: fmt.Errorf("call: %w", errors.Join(api, context.DeadlineExceeded))}
	me = sec.Scrub(me, func(e error) bool {
		if e, ok := e.(*sdkError); ok {
			e.msg = sec.String(e.msg)
			return true
		}
		return false
	}, context.Canceled, context.DeadlineExceeded)
	assert.Equal(t, "echo [redacted]", me.Message)
	assert.NotContains(t, me.Err.Error(), key)
	assert.Contains(t, me.Err.Error(), "bad key [redacted]")
	var got *sdkError
	assert.ErrorAs(t, me.Err, &got, "the SDK's error stays reachable")
	assert.ErrorIs(t, me.Err, context.DeadlineExceeded, "a target it was stays reachable")
	assert.NotErrorIs(t, me.Err, context.Canceled, "a target it was not is not added")

	assert.Equal(t, []byte("a [redacted] b"), sec.Bytes([]byte("a "+key+" b")))
	plain := &llm.ModelError{Message: key}
	assert.Same(t, plain, redact.Secret("").Scrub(plain, func(error) bool { return false }), "no secret: nothing to do")
	assert.Equal(t, key, plain.Message)
}
