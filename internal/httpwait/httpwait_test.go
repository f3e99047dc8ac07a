package httpwait_test

import (
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/reprompt/reprompt/internal/httpwait"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header http.Header
		want   time.Duration
	}{
		{"none", http.Header{}, 0},
		{"nil", nil, 0},
		{"seconds", http.Header{"Retry-After": {"3"}}, 3 * time.Second},
		{"fractional seconds", http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond},
		{"milliseconds win", http.Header{"Retry-After": {"3"}, "Retry-After-Ms": {"250"}}, 250 * time.Millisecond},
		{"http date", http.Header{"Retry-After": {now.Add(20 * time.Second).Format(http.TimeFormat)}}, 20 * time.Second},
		{"date in the past", http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0},
		{"negative", http.Header{"Retry-After": {"-1"}}, 0},
		{"garbage", http.Header{"Retry-After": {"soon"}}, 0},
		{"not a number", http.Header{"Retry-After": {"NaN"}}, 0},
		{"beyond a Duration", http.Header{"Retry-After": {"1e12"}}, time.Duration(math.MaxInt64)},
		{"milliseconds beyond a Duration", http.Header{"Retry-After-Ms": {"+Inf"}}, time.Duration(math.MaxInt64)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := httpwait.RetryAfter(tt.header, now)
			assert.Equal(t, tt.want, got, "RetryAfter = %v, want %v", got, tt.want)
		})
	}
}
