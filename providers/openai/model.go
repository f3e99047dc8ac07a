package openai

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"

	sdk "github.com/sashabaranov/go-openai"

	"github.com/reprompt/reprompt/internal/httpwait"
	"github.com/reprompt/reprompt/internal/modelcaps"
	"github.com/reprompt/reprompt/internal/redact"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/providers/openai/internal/wire"
)

// Model is an llm.StreamingModel backed by an OpenAI-compatible Chat
// Completions endpoint through go-openai. It is safe for concurrent use.
//
// A Model keeps the JSON encoding of the messages it sent, for the four
// conversations it served most recently (an agent and its sub-agents), so
// that a request encodes only its new messages; that memory is about the
// size of those transcripts. Printed (fmt) or logged (slog), it shows its
// configuration without the API key.
type Model struct {
	cfg    Config
	client *sdk.Client
	redact redactor
	wire   *wire.Encoder
	retry  httpwait.Retrier
}

var (
	_ llm.Model          = (*Model)(nil)
	_ llm.StreamingModel = (*Model)(nil)
	_ llm.ModelNamer     = (*Model)(nil)
	_ llm.ProviderNamer  = (*Model)(nil)
	_ llm.Redactor       = (*Model)(nil)
)

// New returns a Model configured by cfg; zero fields of cfg take the
// defaults documented on Config. New does no I/O.
func New(cfg Config) *Model {
	cfg = cfg.withDefaults()
	sc := sdk.DefaultConfig(cfg.APIKey)
	sc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	sc.OrgID = cfg.Organization
	sc.HTTPClient = wire.Doer{Client: cfg.HTTPClient, TooLarge: func(limit int64, streamed bool) error {
		return &ReplyTooLargeError{Limit: limit, Streamed: streamed}
	}}
	if cfg.MaxReplyBytes > 0 {
		// go-openai fails a stream after 300 lines without data in a row;
		// SSE comments sent as keepalives while a model thinks are such
		// lines. MaxReplyBytes bounds them instead.
		sc.EmptyMessagesLimit = math.MaxUint
	}
	return &Model{cfg: cfg, client: sdk.NewClientWithConfig(sc), redact: redactor{secret: redact.Secret(cfg.APIKey)}, wire: wire.NewEncoder(cfg.wireOptions()),
		retry: cfg.retrier()}
}

// FromEnv returns New(ConfigFromEnv()).
func FromEnv() *Model { return New(ConfigFromEnv()) }

// Name returns the model name sent with each request.
func (m *Model) Name() string { return m.cfg.Model }

// ModelName returns the model name sent with each request, for traces and
// logs (llm.ModelNamer).
func (m *Model) ModelName() string { return m.cfg.Model }

// ProviderName returns "openai" when the Model talks to the OpenAI API
// (api.openai.com), and "" (unknown) for another server that speaks its
// protocol, for traces (llm.ProviderNamer).
func (m *Model) ProviderName() string {
	if u, err := url.Parse(m.cfg.BaseURL); err == nil && u.Hostname() == "api.openai.com" {
		return "openai"
	}
	return ""
}

// Redact returns s with every occurrence of the API key replaced by
// Redacted, and s itself when there is none (or no key). It implements
// llm.Redactor: the runtime applies it to what it traces and logs, since a
// server may echo the key inside a successful reply, which the adapter
// returns unchanged.
func (m *Model) Redact(s string) string { return m.redact.string(s) }

// NativeOutput reports whether the model takes a typed answer as a strict
// json_schema response_format: Config.NativeOutput if set, otherwise the
// model's profile (builtin.Profile.StructuredOutput). It implements
// llm.NativeOutputModel.
func (m *Model) NativeOutput() bool {
	if m.cfg.NativeOutput != nil {
		return *m.cfg.NativeOutput
	}
	return modelcaps.StructuredOutput(m.cfg.Model) // the table behind builtin.Profile.StructuredOutput
}

// Generate sends req as one Chat Completions request and returns the
// reply. Retryable failures are retried as Config describes. Every error
// is an *llm.ModelError that unwraps to go-openai's error
// (*openai.APIError, *openai.RequestError) or, when ctx ended the call, to
// ctx.Err().
func (m *Model) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	body, err := m.body(req, false)
	if err != nil {
		return nil, err
	}
	return m.withRetries(ctx, body, func(ctx context.Context, ex *wire.Exchange) (*llm.Reply, bool, error) {
		reply, err := wire.Generate(ctx, m.client, m.cfg.Model, ex)
		return reply, false, err
	})
}

// Stream sends req as a streamed Chat Completions request, calls onDelta
// (if not nil) on the calling goroutine for each fragment of content,
// reasoning or tool call as it arrives, and returns the assembled reply.
//
// Usage is requested with stream_options.include_usage unless
// Config.OmitStreamUsage is set; if the server sends no usage chunk the
// reply's Usage is zero. A stream that ends before a finish_reason arrived
// fails with a retryable error wrapping ErrStreamCut. A failed attempt is
// retried as Config describes only if no delta was delivered yet. When ctx
// is done the stream is closed at once and Stream returns an error that
// unwraps to ctx.Err().
func (m *Model) Stream(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Reply, error) {
	if onDelta == nil {
		onDelta = func(llm.Delta) {}
	}
	body, err := m.body(req, true)
	if err != nil {
		return nil, err
	}
	return m.withRetries(ctx, body, func(ctx context.Context, ex *wire.Exchange) (*llm.Reply, bool, error) {
		return wire.Stream(ctx, m.client, m.cfg.Model, ex, onDelta)
	})
}

// body assembles the request body of req from cached encodings. Its errors
// are *llm.ModelError, not retryable.
func (m *Model) body(req *llm.Request, stream bool) ([]byte, error) {
	fail := func(err error) error {
		err = fmt.Errorf("openai: %w", err)
		return m.redact.scrub(&llm.ModelError{Message: err.Error(), Err: err})
	}
	if req == nil {
		return nil, fail(errors.New("nil request"))
	}
	b, err := m.wire.Body(req, stream, m.cfg.cacheKey(req))
	if err != nil {
		return nil, fail(err)
	}
	return b, nil
}

// attemptFunc makes one attempt; delivered reports whether part of the
// reply already reached the caller, which forbids a retry.
type attemptFunc func(ctx context.Context, ex *wire.Exchange) (reply *llm.Reply, delivered bool, err error)

func (m *Model) withRetries(ctx context.Context, body []byte, attempt attemptFunc) (*llm.Reply, error) {
	for n := 0; ; n++ {
		ex := &wire.Exchange{Body: body, MaxReply: m.cfg.MaxReplyBytes}
		reply, delivered, err := attempt(ctx, ex)
		if err == nil {
			return reply, nil
		}
		me := m.classify(ctx, err, ex)
		if !me.Retryable || delivered {
			return nil, me
		}
		if stop := m.retry.Wait(ctx, n, ex.Header, me); stop != nil {
			return nil, stop
		}
	}
}

// classify turns the failure of one attempt into an *llm.ModelError
// without the API key, with a hint when a 404 that is not OpenAI's
// suggests a wrong BaseURL: one whose path names no API version.
func (m *Model) classify(ctx context.Context, err error, ex *wire.Exchange) *llm.ModelError {
	me := classify(ctx, err)
	if me.StatusCode == http.StatusNotFound && ex != nil && ex.Status == http.StatusNotFound && !namesVersion(m.cfg.BaseURL) {
		if _, ok := errors.AsType[*sdk.RequestError](err); ok {
			me.Message += fmt.Sprintf(" (POST %s/chat/completions was not found: BaseURL should be the API root, which ends in /v1 for most servers)",
				strings.TrimRight(m.cfg.BaseURL, "/"))
		}
	}
	return m.redact.scrub(me)
}

// namesVersion reports whether the path of baseURL has a segment that
// names an API version: "v" and a digit, as in /v1, /openai/v1,
// /v1beta/openai or /api/paas/v4. A server reached at such a path that
// answers 404 is the right server saying something else (a model it does
// not have), not a BaseURL missing its /v1.
func namesVersion(baseURL string) bool {
	u, err := url.Parse(baseURL)
	if err != nil {
		return false
	}
	for seg := range strings.SplitSeq(u.Path, "/") {
		if len(seg) >= 2 && (seg[0] == 'v' || seg[0] == 'V') && seg[1] >= '0' && seg[1] <= '9' {
			return true
		}
	}
	return false
}
