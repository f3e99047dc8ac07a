package httpwait_test

import (
	"context"
	"math/rand/v2"
	"net/http"
	"testing"
	"testing/synctest"
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

// TestSetDefaults: zero settings take the defaults given, a negative
// MaxRetries means none, and set ones are kept.
func TestSetDefaults(t *testing.T) {
	var r httpwait.Retrier
	r.SetDefaults(2, time.Second, time.Minute)
	assert.Equal(t, 2, r.MaxRetries)
	assert.Equal(t, time.Second, r.BaseDelay)
	assert.Equal(t, time.Minute, r.MaxDelay)
	require.NotNil(t, r.Sleep, "httpwait.Sleep")

	sleep := func(context.Context, time.Duration) error { return nil }
	r = httpwait.Retrier{MaxRetries: -1, BaseDelay: -time.Second, MaxDelay: 5 * time.Second, Sleep: sleep}
	r.SetDefaults(2, time.Second, time.Minute)
	assert.Equal(t, 0, r.MaxRetries, "negative: no retries")
	assert.Equal(t, time.Second, r.BaseDelay, "negative: the default")
	assert.Equal(t, 5*time.Second, r.MaxDelay, "set: kept")
	assert.NoError(t, r.Sleep(context.Background(), time.Hour), "set: kept")

	r = httpwait.Retrier{MaxRetries: 7}
	r.SetDefaults(2, time.Second, time.Minute)
	assert.Equal(t, 7, r.MaxRetries, "set: kept")
}

// TestSleep: Sleep waits d, or until the context ends (in a synctest
// bubble: no real time, exact lengths).
func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		require.NoError(t, httpwait.Sleep(context.Background(), 90*time.Second))
		assert.Equal(t, 90*time.Second, time.Since(start))

		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		start = time.Now()
		require.ErrorIs(t, httpwait.Sleep(ctx, 90*time.Second), context.DeadlineExceeded)
		assert.Equal(t, 30*time.Second, time.Since(start))

		start = time.Now()
		require.ErrorIs(t, httpwait.Sleep(ctx, -time.Second), context.DeadlineExceeded, "d ≤ 0: the context's error at once")
		require.NoError(t, httpwait.Sleep(context.Background(), 0))
		assert.Zero(t, time.Since(start))
	})
}
