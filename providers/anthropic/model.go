package anthropic

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/reprompt/reprompt/internal/httpwait"
	"github.com/reprompt/reprompt/internal/redact"
	"github.com/reprompt/reprompt/llm"
)

// Model is an llm.StreamingModel and llm.NativeOutputModel backed by
// Anthropic's Messages API through the official Go SDK. It is safe for
// concurrent use. Printed (fmt) or logged (slog), it shows its
// configuration without the API key.
type Model struct {
	cfg    Config
	client sdk.Client
	redact redactor
	retry  httpwait.Retrier
	enc    encoder
	// stub is what the SDK reads of a request besides its body (the model
	// and max_tokens for the timeout of Generate, and thinking for a
	// warning): the body itself is assembled by m.body and sent as it is.
	stub sdk.MessageNewParams
}

var (
	_ llm.Model             = (*Model)(nil)
	_ llm.StreamingModel    = (*Model)(nil)
	_ llm.NativeOutputModel = (*Model)(nil)
	_ llm.ModelNamer        = (*Model)(nil)
	_ llm.ProviderNamer     = (*Model)(nil)
)

// New returns a Model configured by cfg; zero fields of cfg take the
// defaults documented on Config. New does no I/O, and reads nothing from
// the environment (see ConfigFromEnv).
func New(cfg Config) *Model {
	cfg = cfg.withDefaults()
	m := &Model{cfg: cfg, redact: redactor{secret: redact.Secret(cfg.APIKey)}, retry: cfg.retrier()}
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(), // the Config is the whole configuration
		option.WithBaseURL(strings.TrimRight(cfg.BaseURL, "/") + "/"),
		option.WithHTTPClient(cfg.HTTPClient),
		option.WithMaxRetries(0), // retried here, as Config says
		option.WithMiddleware(m.middleware),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	if len(cfg.Beta) > 0 {
		opts = append(opts, option.WithHeader("anthropic-beta", strings.Join(cfg.Beta, ",")))
	}
	m.client = sdk.NewClient(opts...)
	if frame, _, err := m.frame(&llm.Request{}); err == nil {
		m.stub = sdk.MessageNewParams{Model: frame.Model, MaxTokens: frame.MaxTokens, Thinking: frame.Thinking}
	}
	return m
}

// FromEnv returns New(ConfigFromEnv()).
func FromEnv() *Model { return New(ConfigFromEnv()) }

// ModelName returns the model name sent with each request, for traces and
// logs (llm.ModelNamer).
func (m *Model) ModelName() string { return m.cfg.Model }

// ProviderName returns "anthropic" when the Model talks to the Anthropic
// API (api.anthropic.com), and "" (unknown) for another server, for traces
// (llm.ProviderNamer).
func (m *Model) ProviderName() string {
	if u, err := url.Parse(m.cfg.BaseURL); err == nil && u.Hostname() == "api.anthropic.com" {
		return "anthropic"
	}
	return ""
}

// NativeOutput reports whether the model takes a typed answer as
// output_config.format: Config.NativeOutput if set, otherwise the model's
// name decides (see Config.NativeOutput). It implements
// llm.NativeOutputModel.
func (m *Model) NativeOutput() bool {
	if m.cfg.NativeOutput != nil {
		return *m.cfg.NativeOutput
	}
	return nativeOutputModel(m.cfg.Model)
}

// Generate sends req as one Messages request and returns the reply.
// Retryable failures are retried as Config describes. Every error is an
// *llm.ModelError that unwraps to the SDK's *anthropic.Error when the
// server answered one, or, when ctx ended the call, to ctx.Err().
func (m *Model) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	body, err := m.request(req)
	if err != nil {
		return nil, err
	}
	return m.withRetries(ctx, func(ctx context.Context) (*llm.Reply, bool, error) {
		msg, err := m.client.Messages.New(ctx, m.stub, body)
		if err != nil {
			return nil, false, err
		}
		return replyOf(msg), false, nil
	})
}

// Stream sends req as a streamed Messages request, calls onDelta (if not
// nil) on the calling goroutine for each fragment of text, thinking or
// tool call as it arrives (a tool call's id and name first, then its
// arguments' JSON in pieces), and returns the assembled reply, as Generate
// would have. A stream that ends before message_stop fails with a
// retryable error wrapping ErrStreamCut; an error event inside the stream
// fails with the status its type stands for (overloaded_error: 529). A
// failed attempt is retried as Config describes only if no delta was
// delivered yet.
func (m *Model) Stream(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Reply, error) {
	if onDelta == nil {
		onDelta = func(llm.Delta) {}
	}
	body, err := m.request(req)
	if err != nil {
		return nil, err
	}
	return m.withRetries(ctx, func(ctx context.Context) (*llm.Reply, bool, error) {
		return m.streamOnce(ctx, body, onDelta)
	})
}

// request returns the option that sends req's body (see body): the SDK
// takes it in place of the encoding of the stub parameters, and adds
// "stream" to it for a streamed request, as it does to its own encoding.
func (m *Model) request(req *llm.Request) (option.RequestOption, error) {
	if req == nil {
		return nil, m.requestError(errors.New("nil request"))
	}
	body, err := m.body(req)
	if err != nil {
		return nil, err
	}
	return option.WithRequestBody("application/json", body), nil
}

// attemptFunc makes one attempt; delivered reports whether part of the
// reply already reached the caller, which forbids a retry.
type attemptFunc func(ctx context.Context) (reply *llm.Reply, delivered bool, err error)

// exchange is what the middleware saw of one attempt's response.
type exchange struct {
	status int
	header http.Header
}

type exchangeKey struct{}

func (m *Model) withRetries(ctx context.Context, attempt attemptFunc) (*llm.Reply, error) {
	for n := 0; ; n++ {
		ex := &exchange{}
		reply, delivered, err := attempt(context.WithValue(ctx, exchangeKey{}, ex))
		if err == nil {
			return reply, nil
		}
		me := m.redact.scrub(classify(ctx, err, ex))
		if !me.Retryable || delivered {
			return nil, me
		}
		if stop := m.retry.Wait(ctx, n, ex.header, me); stop != nil {
			return nil, stop
		}
	}
}

// middleware records the status and headers of each response for
// withRetries, and bounds its body by MaxReplyBytes.
func (m *Model) middleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	resp, err := next(req)
	if resp == nil {
		return resp, err
	}
	if ex, ok := req.Context().Value(exchangeKey{}).(*exchange); ok {
		ex.status, ex.header = resp.StatusCode, resp.Header
	}
	if resp.Body != nil && m.cfg.MaxReplyBytes > 0 {
		streamed := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
		resp.Body = &cappedBody{rc: resp.Body, left: m.cfg.MaxReplyBytes, err: &ReplyTooLargeError{Limit: m.cfg.MaxReplyBytes, Streamed: streamed}}
	}
	return resp, err
}

// cappedBody reads at most left bytes of rc, and fails with err when rc
// holds more.
type cappedBody struct {
	rc   io.ReadCloser
	left int64
	err  error
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		if n, err := b.rc.Read(one[:]); n > 0 {
			return 0, b.err
		} else if err != nil {
			return 0, err
		}
		return 0, nil
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }
