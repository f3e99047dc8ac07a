package llm_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/llm"
)

// TestErrorTexts is the contract of the errors' text: each error prints
// every field a reader needs.
func TestErrorTexts(t *testing.T) {
	cause := errors.New("connection reset")
	tests := []struct {
		name string
		err  error
		want []string // parts the text contains
	}{
		{"request", &llm.RequestError{Index: 4, Reason: `second tool result for call "c1"`},
			[]string{"message 4", `second tool result for call "c1"`}},
		{"model with status", &llm.ModelError{StatusCode: 503, Retryable: true, Message: "overloaded"},
			[]string{"status 503", "retryable=true", "overloaded"}},
		{"model without status", &llm.ModelError{Err: cause},
			[]string{"retryable=false", "connection reset"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, w := range tt.want {
				assert.Contains(t, tt.err.Error(), w)
			}
		})
	}
	assert.NotContains(t, (&llm.ModelError{Err: cause}).Error(), "status", "no status is printed when there was none")
}

func TestModelErrorUnwraps(t *testing.T) {
	cause := errors.New("connection reset")
	err := fmt.Errorf("step 2: %w", &llm.ModelError{Retryable: true, Err: cause})
	require.ErrorIs(t, err, cause)
	var me *llm.ModelError
	require.ErrorAs(t, err, &me)
	assert.True(t, me.Retryable)
}

func TestIsRetryable(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"other error", errors.New("boom"), false},
		{"not retryable", &llm.ModelError{StatusCode: 400}, false},
		{"retryable", &llm.ModelError{StatusCode: 429, Retryable: true}, true},
		{"wrapped retryable", fmt.Errorf("call: %w", &llm.ModelError{Retryable: true}), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, llm.IsRetryable(tt.err))
		})
	}
}

func TestUsageTotal(t *testing.T) {
	u := llm.Usage{InputTokens: 120, OutputTokens: 30, CachedTokens: 100, ReasoningTokens: 10}
	assert.Equal(t, 150, u.Total(), "cached and reasoning tokens are parts of input and output, not added again")
	u.CacheWriteTokens, u.CacheWrite1hTokens = 20, 5
	assert.Equal(t, 150, u.Total(), "cache writes are part of input, not added again")
}
