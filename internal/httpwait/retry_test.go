package httpwait_test

import (
	"context"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/internal/httpwait"
	"github.com/reprompt/reprompt/llm"
)

// TestRetrierWait pins each decision of Retrier.Wait.
func TestRetrierWait(t *testing.T) {
	var slept []time.Duration
	r := &httpwait.Retrier{MaxRetries: 2, BaseDelay: time.Second, MaxDelay: 10 * time.Second, Rand: rand.New(rand.NewPCG(1, 2)),
		Sleep: func(ctx context.Context, d time.Duration) error { slept = append(slept, d); return ctx.Err() }}
	me := func() *llm.ModelError {
		return &llm.ModelError{StatusCode: 529, Retryable: true, Message: "overloaded"}
	}
	ctx := context.Background()

	require.Nil(t, r.Wait(ctx, 0, nil, me()), "first retry")
	require.Len(t, slept, 1)
	assert.InDelta(t, float64(time.Second), float64(slept[0]), float64(time.Second)/4, "backoff with jitter")

	require.Nil(t, r.Wait(ctx, 1, http.Header{"Retry-After": {"7"}}, me()), "the server's delay")
	assert.Equal(t, 7*time.Second, slept[1])

	assert.Equal(t, "overloaded", r.Wait(ctx, 2, nil, me()).Message, "retries spent")

	long := r.Wait(ctx, 0, http.Header{"Retry-After": {"60"}}, me())
	require.NotNil(t, long, "a delay past MaxDelay")
	assert.Contains(t, long.Message, "asked to retry after 1m0s, more than RetryMaxDelay 10s")

	short, cancel := context.WithTimeout(ctx, time.Millisecond)
	defer cancel()
	assert.NotNil(t, r.Wait(short, 0, nil, me()), "the context ends before the wait would")

	done, cancel2 := context.WithCancel(ctx)
	cancel2()
	got := r.Wait(done, 0, nil, me())
	require.NotNil(t, got, "the context ended during the wait")
	assert.ErrorIs(t, got, context.Canceled)
	assert.Equal(t, 529, got.StatusCode)
	assert.Len(t, slept, 3, "no sleep but the three that were due")
}
