package openai

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/reprompt/reprompt/internal/httpwait"
	"github.com/reprompt/reprompt/internal/modelcaps"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/providers/openai/internal/wire"
)

// Defaults used when the corresponding Config field is zero.
const (
	// DefaultBaseURL is the OpenAI API endpoint.
	DefaultBaseURL = "https://api.openai.com/v1"
	// DefaultModel is the model used when Config.Model is empty.
	DefaultModel = "gpt-4o-mini"
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
	EnvAPIKey = "OPENAI_API_KEY"
	// EnvBaseURL names the variable holding Config.BaseURL.
	EnvBaseURL = "OPENAI_BASE_URL"
	// EnvModel names the variable holding Config.Model.
	EnvModel = "OPENAI_MODEL"
)

// ReasoningMode says whether a model is treated as a reasoning model, which
// changes how parameters are sent (see Config.Reasoning).
type ReasoningMode int

const (
	// ReasoningAuto decides from the model name: names starting with o1, o3,
	// o4, gpt-5 or gpt-6 (after any "provider/" prefix) are reasoning models.
	ReasoningAuto ReasoningMode = iota
	// ReasoningOn treats the model as a reasoning model whatever its name.
	ReasoningOn
	// ReasoningOff treats the model as a classic chat model whatever its name.
	ReasoningOff
)

// CacheMode says whether requests carry OpenAI's prompt-cache fields,
// prompt_cache_key and prompt_cache_retention (see Config.Cache).
type CacheMode int

const (
	// CacheAuto sends them to OpenAI's API (a BaseURL on api.openai.com)
	// and to no other server: most ignore fields they do not know, but
	// some reject them.
	CacheAuto CacheMode = iota
	// CacheOn sends them to any server: Azure OpenAI, or a proxy that
	// passes them on to OpenAI.
	CacheOn
	// CacheOff sends neither.
	CacheOff
)

// Config configures a Model. The zero value talks to the OpenAI API with no
// API key, using DefaultModel, the server's default sampling parameters,
// usage reporting in streams, and DefaultMaxRetries retries.
//
// The same Config works against any server that speaks the Chat Completions
// protocol: set BaseURL to http://localhost:11434/v1 for Ollama, to the
// server's /v1 URL for vLLM or llama.cpp, and leave APIKey empty when the
// server needs none.
type Config struct {
	// APIKey is sent as a bearer token. If empty, no Authorization header is
	// sent.
	APIKey string
	// BaseURL is the API root, ending in /v1 for most servers. If empty,
	// DefaultBaseURL is used.
	BaseURL string
	// Model is the model name sent with every request. If empty,
	// DefaultModel is used.
	Model string
	// Organization, if set, is sent as the OpenAI-Organization header.
	Organization string
	// HTTPClient sends the requests. If nil, a client with no timeout is
	// used; cancel the context passed to Generate or Stream to bound a call.
	HTTPClient *http.Client

	// Reasoning says whether Model is a reasoning model. A reasoning model
	// gets MaxTokens as max_completion_tokens and never gets Temperature or
	// TopP (those models reject them, so they are dropped, not reported);
	// other models get max_tokens, temperature and top_p. The zero value,
	// ReasoningAuto, decides from the model name.
	Reasoning ReasoningMode
	// Temperature is the sampling temperature. If nil, none is sent and the
	// server's default applies; a pointer to 0 sends 0.
	Temperature *float64
	// TopP is the nucleus sampling mass. If nil, none is sent.
	TopP *float64
	// MaxTokens bounds the reply's length (including reasoning tokens for
	// reasoning models). If 0, no limit is sent.
	MaxTokens int
	// ReasoningEffort ("minimal", "low", "medium", "high", ...) is sent as
	// reasoning_effort when not empty, whatever the model.
	ReasoningEffort string
	// Seed, if not nil, asks the server for deterministic sampling.
	Seed *int
	// Stop lists sequences at which the server stops generating. The slice
	// is read, never modified.
	Stop []string
	// ParallelToolCalls, if not nil, is sent as parallel_tool_calls when the
	// request has tools.
	ParallelToolCalls *bool
	// NativeOutput says whether the model takes a typed answer
	// (prompt.DefOutput) as a strict json_schema response_format; the
	// adapter implements llm.NativeOutputModel with it, so that with
	// llm.OutputAuto the runtime asks for the answer that way, and
	// with an answer tool otherwise. If nil, the model's profile decides
	// (builtin.ProfileFor(Model).StructuredOutput: OpenAI's gpt-4o, gpt-4.1,
	// gpt-5, o1, o3 and o4-mini families); set it for a server whose
	// models take one too (recent vLLM, Ollama and llama.cpp servers do).
	NativeOutput *bool
	// ReplayReasoning sends the Reasoning of earlier assistant messages back
	// as reasoning_content. The zero value drops it, which is what OpenAI
	// and most servers expect.
	ReplayReasoning bool

	// Cache says whether requests carry the prompt-cache fields below.
	// The zero value, CacheAuto, sends them to OpenAI's API only.
	//
	// OpenAI caches the prefix of every request of 1,024 tokens or more on
	// its own; what raises the hit rate is sending the requests that share
	// a prefix to the same machine, which prompt_cache_key does.
	Cache CacheMode
	// PromptCacheKey is sent as prompt_cache_key. If empty, the request's
	// session is: llm.Request.SessionID (the runtime's Config.SessionID),
	// followed by "/" and llm.Request.Agent for a sub-agent's request, so
	// that each conversation keeps its own key; a request without a
	// session gets no key. The key reaches OpenAI as it is: set
	// PromptCacheKey (a hash of the session, say) if session ids must not.
	PromptCacheKey string
	// PromptCacheRetention is sent as prompt_cache_retention: how long
	// OpenAI keeps a cached prefix: "in_memory" (5 to 10 minutes without
	// use, an hour at most) or "24h" (extended prompt caching). It is sent only to a
	// model that takes it, as OpenAI documents them: "24h" to the gpt-4.1
	// and gpt-5 families and later, "in_memory" to every model but gpt-5.5
	// and later, which take only "24h"; to another model of OpenAI's it is
	// dropped, not reported (as Temperature is for reasoning models). A
	// model outside OpenAI's families gets it as set. If empty, none is
	// sent and the server's default applies (OpenAI's depends on the
	// organisation's data retention and on the model).
	PromptCacheRetention string

	// OmitStreamUsage stops Stream from asking for a usage chunk
	// (stream_options.include_usage). The zero value asks for one; set it
	// for servers that reject stream_options. When a server sends no usage
	// chunk the streamed Reply's Usage is left zero.
	OmitStreamUsage bool

	// MaxRetries is the number of retries after a retryable failure (HTTP
	// 408, 409, 429 other than insufficient_quota, 5xx, network errors,
	// streams cut short before any delta was delivered). If 0,
	// DefaultMaxRetries is used; a negative value disables retries.
	MaxRetries int
	// RetryBaseDelay is the delay before the first retry; each later retry
	// waits twice as long, up to RetryMaxDelay, minus up to a quarter of
	// random jitter. If 0, DefaultRetryBaseDelay is used.
	RetryBaseDelay time.Duration
	// RetryMaxDelay bounds the delay between attempts. A Retry-After (or
	// retry-after-ms) header from the server is honoured when it is at most
	// RetryMaxDelay; a longer one ends the retries and the error is
	// returned. If 0, DefaultRetryMaxDelay is used.
	RetryMaxDelay time.Duration
	// MaxReplyBytes bounds the bytes read from one response body, streamed
	// or not (a stream's event framing included; an error body is cut at
	// it). A reply that would exceed it fails with a *ReplyTooLargeError,
	// which is not retried, and the connection is closed. If 0,
	// DefaultMaxReplyBytes is used; a negative value removes the bound.
	// SSE comments (keepalives) count towards it; without a bound, a
	// stream fails after 300 lines in a row without data, as go-openai
	// decides.
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
// OPENAI_API_KEY, OPENAI_BASE_URL and OPENAI_MODEL. Unset variables leave
// the field empty, so its default applies. For example, against Ollama:
//
//	OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=qwen3:4b
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

// wireOptions returns the request fields of c, whose defaults are applied.
func (c Config) wireOptions() wire.Options {
	o := wire.Options{
		Model:             c.Model,
		Stop:              c.Stop,
		Seed:              c.Seed,
		ReasoningEffort:   c.ReasoningEffort,
		Reasoning:         c.Reasoning == ReasoningOn || (c.Reasoning == ReasoningAuto && isReasoningModel(c.Model)),
		MaxTokens:         c.MaxTokens,
		Temperature:       c.Temperature,
		TopP:              c.TopP,
		ParallelToolCalls: c.ParallelToolCalls,
		ReplayReasoning:   c.ReplayReasoning,
		OmitStreamUsage:   c.OmitStreamUsage,
	}
	if c.sendsCacheFields() && c.PromptCacheRetention != "" && modelcaps.TakesCacheRetention(c.Model, c.PromptCacheRetention) {
		o.PromptCacheRetention = c.PromptCacheRetention
	}
	return o
}

// sendsCacheFields reports whether requests carry the prompt-cache fields
// (Cache), for c with its defaults applied.
func (c Config) sendsCacheFields() bool {
	switch c.Cache {
	case CacheOn:
		return true
	case CacheOff:
		return false
	}
	u, err := url.Parse(c.BaseURL)
	return err == nil && u.Hostname() == "api.openai.com"
}

// cacheKey returns the prompt_cache_key of req, or "" for none.
func (c Config) cacheKey(req *llm.Request) string {
	switch {
	case !c.sendsCacheFields():
		return ""
	case c.PromptCacheKey != "":
		return c.PromptCacheKey
	case req.SessionID == "":
		return ""
	case req.Agent != "":
		return req.SessionID + "/" + req.Agent
	}
	return req.SessionID
}

// sleep is the Config.Sleep used when none is set.
var sleep = httpwait.Sleep

// isReasoningModel reports whether name belongs to a family that takes
// max_completion_tokens and rejects temperature.
func isReasoningModel(name string) bool {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	name = strings.ToLower(name)
	for _, p := range []string{"o1", "o3", "o4", "gpt-5", "gpt-6"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// retrier returns the retry schedule c (with its defaults) sets.
func (c Config) retrier() httpwait.Retrier {
	return httpwait.Retrier{MaxRetries: c.MaxRetries, BaseDelay: c.RetryBaseDelay, MaxDelay: c.RetryMaxDelay, Rand: c.Rand, Sleep: c.Sleep}
}
