// Package httpwait is the providers' retry schedule (Retrier): the delay
// an HTTP server asks a client to wait before it tries again
// (RetryAfter), exponential backoff with jitter, the decision to retry
// or give up, and the defaults of an adapter's retry settings
// (SetDefaults, Sleep). It is apart from
// package llm so that the model contract does not link net/http into
// programs that never call a server.
package httpwait

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RetryAfter reads the delay a server asked a client to wait before it
// tries again: Retry-After-Ms (OpenAI's,
// Anthropic's), then Retry-After in seconds or as an HTTP date, relative
// to now. It returns 0 when the headers ask for none, or for a delay that
// is negative, not a number, or past; a delay beyond the longest Duration
// saturates at it (a float beyond it would convert to a negative number).
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && ms > 0 {
			return durationOf(ms, time.Millisecond)
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if !(s > 0) { // NaN too
			return 0
		}
		return durationOf(s, time.Second)
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// durationOf returns n units, n > 0, saturated at the longest Duration.
func durationOf(n float64, unit time.Duration) time.Duration {
	if d := n * float64(unit); d < float64(math.MaxInt64) {
		return time.Duration(d)
	}
	return math.MaxInt64
}
