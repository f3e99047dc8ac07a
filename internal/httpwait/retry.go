package httpwait

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/reprompt/reprompt/llm"
)

// Retrier is a provider adapter's retry schedule: exponential backoff
// with jitter, the server's Retry-After honoured up to MaxDelay, and no
// wait that would outlast the call's context. It is safe for concurrent
// use.
type Retrier struct {
	MaxRetries int
	// BaseDelay is the delay before the first retry; each later one waits
	// twice as long, up to MaxDelay, minus up to a quarter of jitter.
	BaseDelay, MaxDelay time.Duration
	// Rand is the source of jitter; nil means math/rand/v2's top-level
	// functions. Its use is serialised.
	Rand *rand.Rand
	// Sleep waits, returning early with ctx.Err() when ctx is done.
	Sleep func(ctx context.Context, d time.Duration) error

	mu sync.Mutex // guards Rand
}

// Wait decides after the failed attempt n (from 0), which failed with me
// (retryable) and whose response had header h (nil without one), whether
// to try again: it sleeps and returns nil, or returns the error to give
// the caller instead: me when the retries are spent, the server asked for
// a longer wait than MaxDelay (said in its Message) or the context ends
// before the wait would, and me wrapped with the context's error when the
// context ended during the wait.
func (r *Retrier) Wait(ctx context.Context, n int, h http.Header, me *llm.ModelError) *llm.ModelError {
	if n >= r.MaxRetries {
		return me
	}
	delay := r.Backoff(n)
	if ra := RetryAfter(h, time.Now()); ra > 0 {
		if ra > r.MaxDelay {
			me.Message += fmt.Sprintf(" (the server asked to retry after %v, more than RetryMaxDelay %v)", ra, r.MaxDelay)
			return me
		}
		delay = ra
	}
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < delay {
		return me
	}
	if err := r.Sleep(ctx, delay); err != nil {
		werr := fmt.Errorf("%w while waiting to retry after: %w", err, me)
		return &llm.ModelError{StatusCode: me.StatusCode, Message: werr.Error(), Err: werr}
	}
	return nil
}

// Backoff returns the delay before retry n+1: BaseDelay·2ⁿ capped at
// MaxDelay, minus up to 25% jitter.
func (r *Retrier) Backoff(n int) time.Duration {
	d := r.BaseDelay
	for i := 0; i < n && d < r.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, r.MaxDelay)
	var f float64
	if r.Rand != nil {
		r.mu.Lock()
		f = r.Rand.Float64()
		r.mu.Unlock()
	} else {
		f = rand.Float64()
	}
	return time.Duration(float64(d) * (1 - 0.25*f))
}

// SetDefaults replaces r's zero settings, as an adapter's Config
// documents them: a MaxRetries of 0 by maxRetries and a negative one by 0
// (no retries), a BaseDelay or MaxDelay of 0 or less by baseDelay or
// maxDelay, and a nil Sleep by Sleep.
func (r *Retrier) SetDefaults(maxRetries int, baseDelay, maxDelay time.Duration) {
	switch {
	case r.MaxRetries == 0:
		r.MaxRetries = maxRetries
	case r.MaxRetries < 0:
		r.MaxRetries = 0
	}
	if r.BaseDelay <= 0 {
		r.BaseDelay = baseDelay
	}
	if r.MaxDelay <= 0 {
		r.MaxDelay = maxDelay
	}
	if r.Sleep == nil {
		r.Sleep = Sleep
	}
}

// Sleep waits for d and returns nil, or returns ctx.Err() when ctx is
// done first (at once for a d of 0 or less): a Retrier's Sleep when its
// adapter's Config sets none.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
