package anthropic

import (
	"context"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/reprompt/reprompt/internal/httpwait"
)

// Defaults used when the corresponding Config field is zero.
const (
	// DefaultBaseURL is the Anthropic API endpoint.
	DefaultBaseURL = "https://api.anthropic.com"
	// DefaultModel is the model used when Config.Model is empty.
	DefaultModel = "claude-sonnet-4-5"
	// DefaultMaxTokens is the reply's length bound sent when
	// Config.MaxTokens is 0 (the Messages API requires one).
	DefaultMaxTokens = 8192
	// DefaultMaxRetries is the number of retries after a retryable failure.
	DefaultMaxRetries = 2
	// DefaultRetryBaseDelay is the delay before the first retry, doubled for
	// each later one.
	DefaultRetryBaseDelay = 500 * time.Millisecond
	// DefaultRetryMaxDelay bounds the delay between two attempts.
	DefaultRetryMaxDelay = 30 * time.Second
	// DefaultMaxReplyBytes bounds the size of a reply's body, streamed or
	// not, when Config.MaxReplyBytes is 0.
	DefaultMaxReplyBytes = 32 << 20
)

// Environment variables read by ConfigFromEnv.
const (
	// EnvAPIKey names the variable holding Config.APIKey.
	EnvAPIKey = "ANTHROPIC_API_KEY"
	// EnvBaseURL names the variable holding Config.BaseURL.
	EnvBaseURL = "ANTHROPIC_BASE_URL"
	// EnvModel names the variable holding Config.Model.
	EnvModel = "ANTHROPIC_MODEL"
)

// CacheTTL is how long the prompt-cache entries written at the adapter's
// cache breakpoints live (see Config.Cache).
type CacheTTL string

// Cache settings.
const (
	// Cache5m places breakpoints whose entries live 5 minutes (refreshed
	// at each hit), billed by Anthropic at 1.25× the input price when
	// written. It is the zero value's meaning; no ttl is sent.
	Cache5m CacheTTL = ""
	// Cache1h places breakpoints whose entries live an hour, billed at 2×
	// the input price when written: for sessions that pause longer than 5
	// minutes between steps.
	Cache1h CacheTTL = "1h"
	// CacheOff places no breakpoint: Anthropic then caches nothing.
	CacheOff CacheTTL = "off"
)

// Config configures a Model. The zero value talks to the Anthropic API
// with no API key, using DefaultModel, DefaultMaxTokens, no extended
// thinking, cache breakpoints with a 5-minute TTL, and DefaultMaxRetries
// retries.
type Config struct {
	// APIKey is the API key, sent as the SDK sends it (a bearer token in
	// the Authorization header). If empty, none is sent (for
	// a local server or a proxy that adds it).
	APIKey string
	// BaseURL is the API root, without /v1. If empty, DefaultBaseURL is
	// used.
	BaseURL string
	// Model is the model name sent with every request. If empty,
	// DefaultModel is used.
	Model string
	// HTTPClient sends the requests. If nil, a client with no timeout is
	// used; cancel the context passed to Generate or Stream to bound a
	// call. (Generate's requests also time out after 10 minutes, and a
	// MaxTokens that could take longer fails before sending, as the SDK
	// decides: use Stream for long replies.)
	HTTPClient *http.Client
	// Beta lists beta features sent in the anthropic-beta header
	// ("interleaved-thinking-2025-05-14", ...). The slice is read, never
	// modified.
	Beta []string

	// MaxTokens bounds the reply's length, thinking included. If 0,
	// DefaultMaxTokens is used.
	MaxTokens int
	// ThinkingBudget, if positive, turns extended thinking on with this
	// budget_tokens (at least 1024, and below MaxTokens). Thinking blocks
	// come back as the reply's Reasoning, and with their signatures in
	// Meta[MetaThinking], which the adapter sends back as the API requires.
	ThinkingBudget int
	// AdaptiveThinking turns adaptive thinking on (thinking type
	// "adaptive", where the model decides how much to think), for the
	// models that take it. It is ignored when ThinkingBudget is set.
	AdaptiveThinking bool
	// Effort ("low", "medium", "high", ...) is sent as output_config.effort
	// when not empty, for the models that take it.
	Effort string
	// StopSequences lists sequences at which the model stops generating.
	// The slice is read, never modified.
	StopSequences []string
	// NativeOutput says whether the model takes a typed answer
	// (prompt.DefOutput) as output_config.format (Anthropic's structured
	// outputs); the adapter implements llm.NativeOutputModel with it, so
	// that with llm.OutputAuto the runtime asks for the answer that way,
	// and with an answer tool otherwise. If nil, the model's name decides:
	// Claude Opus 4.1 and the 4.5 generation and later take it.
	NativeOutput *bool
	// Cache is the TTL of the cache breakpoints the adapter places (see
	// the package documentation), or CacheOff to place none. The zero
	// value, Cache5m, uses Anthropic's default of 5 minutes.
	Cache CacheTTL

	// MaxRetries is the number of retries after a retryable failure (HTTP
	// 408, 409, 429, 5xx and 529 overloaded, network errors, streams cut
	// short before any delta was delivered). If 0, DefaultMaxRetries is
	// used; a negative value disables retries.
	MaxRetries int
	// RetryBaseDelay is the delay before the first retry; each later retry
	// waits twice as long, up to RetryMaxDelay, minus up to a quarter of
	// random jitter. If 0, DefaultRetryBaseDelay is used.
	RetryBaseDelay time.Duration
	// RetryMaxDelay bounds the delay between attempts. A retry-after (or
	// retry-after-ms) header from the server is honoured when it is at
	// most RetryMaxDelay; a longer one ends the retries and the error is
	// returned. If 0, DefaultRetryMaxDelay is used.
	RetryMaxDelay time.Duration
	// MaxReplyBytes bounds the bytes read from one response body, streamed
	// or not (a stream's event framing and pings included; an error body
	// is cut at it). A reply that would exceed it fails with a
	// *ReplyTooLargeError, which is not retried. If 0,
	// DefaultMaxReplyBytes is used; a negative value removes the bound.
	MaxReplyBytes int64

	// Rand is the source of retry jitter. If nil, the math/rand/v2
	// top-level functions are used. The Model serialises its use of Rand.
	Rand *rand.Rand
	// Sleep waits between attempts and returns early with ctx.Err() when
	// ctx is done. If nil, a timer is used. Tests set it to record delays
	// without waiting.
	Sleep func(ctx context.Context, d time.Duration) error
}

// ConfigFromEnv returns a Config with APIKey, BaseURL and Model read from
// ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL and ANTHROPIC_MODEL. Unset
// variables leave the field empty, so its default applies.
func ConfigFromEnv() Config {
	return Config{
		APIKey:  os.Getenv(EnvAPIKey),
		BaseURL: os.Getenv(EnvBaseURL),
		Model:   os.Getenv(EnvModel),
	}
}

// withDefaults returns c with its zero fields replaced by the defaults.
func (c Config) withDefaults() Config {
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	if c.Model == "" {
		c.Model = DefaultModel
	}
	if c.MaxTokens <= 0 {
		c.MaxTokens = DefaultMaxTokens
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
	r := c.retrier()
	r.SetDefaults(DefaultMaxRetries, DefaultRetryBaseDelay, DefaultRetryMaxDelay)
	c.MaxRetries, c.RetryBaseDelay, c.RetryMaxDelay, c.Sleep = r.MaxRetries, r.BaseDelay, r.MaxDelay, r.Sleep
	if c.MaxReplyBytes == 0 {
		c.MaxReplyBytes = DefaultMaxReplyBytes
	}
	return c
}

// nativeOutputModel reports whether a model takes output_config.format:
// Claude Opus 4.1, and the 4.5 generation and later ("claude-sonnet-4-5",
// "claude-haiku-4-5-20251001", "claude-opus-5", ...). Names of the older
// scheme ("claude-3-5-sonnet-…") do not.
func nativeOutputModel(name string) bool {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	parts := strings.Split(strings.ToLower(name), "-")
	if len(parts) < 3 || parts[0] != "claude" {
		return false
	}
	if _, err := strconv.Atoi(parts[1]); err == nil { // "claude-3-5-sonnet": the older scheme
		return false
	}
	major, err := strconv.Atoi(parts[2])
	if err != nil {
		return false
	}
	minor := 0
	if len(parts) > 3 && len(parts[3]) < 3 { // not a date
		minor, _ = strconv.Atoi(parts[3])
	}
	switch {
	case major > 4:
		return true
	case major < 4:
		return false
	case minor >= 5:
		return true
	default:
		return parts[1] == "opus" && minor >= 1
	}
}

// retrier returns the retry schedule c (with its defaults) sets.
func (c Config) retrier() httpwait.Retrier {
	return httpwait.Retrier{MaxRetries: c.MaxRetries, BaseDelay: c.RetryBaseDelay, MaxDelay: c.RetryMaxDelay, Rand: c.Rand, Sleep: c.Sleep}
}
