package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	sdk "github.com/sashabaranov/go-openai"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/internal/modelcaps"
	"github.com/reprompt/reprompt/llm"
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
	wire   wireCache
	randMu sync.Mutex
}

var (
	_ llm.Model          = (*Model)(nil)
	_ llm.StreamingModel = (*Model)(nil)
	_ llm.ModelNamer     = (*Model)(nil)
	_ llm.ProviderNamer  = (*Model)(nil)
)

// New returns a Model configured by cfg; zero fields of cfg take the
// defaults documented on Config. New does no I/O.
func New(cfg Config) *Model {
	cfg = cfg.withDefaults()
	sc := sdk.DefaultConfig(cfg.APIKey)
	sc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	sc.OrgID = cfg.Organization
	sc.HTTPClient = doer{client: cfg.HTTPClient}
	if cfg.MaxReplyBytes > 0 {
		// go-openai fails a stream after 300 lines without data in a row;
		// SSE comments sent as keepalives while a model thinks are such
		// lines. MaxReplyBytes bounds them instead.
		sc.EmptyMessagesLimit = math.MaxUint
	}
	return &Model{cfg: cfg, client: sdk.NewClientWithConfig(sc), redact: redactor{secret: cfg.APIKey}}
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
	return m.withRetries(ctx, body, func(ctx context.Context, ex *exchange) (*llm.Reply, bool, error) {
		resp, err := m.client.CreateChatCompletion(ctx, sdk.ChatCompletionRequest{Model: m.cfg.Model})
		if err != nil {
			if ex.raw != nil && ctx.Err() == nil {
				// The body arrived whole (ex.raw) but go-openai could not
				// decode it.
				if err := replyError(ex.raw, ex.status); err != nil {
					return nil, false, err
				}
				var again sdk.ChatCompletionResponse
				if flat, ok := flattenContentParts(ex.raw); ok && json.Unmarshal(flat, &again) == nil {
					reply, err := convertReply(&again, flat)
					return reply, false, err
				}
				return nil, false, undecodable(ex, err)
			}
			return nil, false, err
		}
		if err := replyError(ex.raw, ex.status); err != nil {
			return nil, false, err
		}
		reply, err := convertReply(&resp, ex.raw)
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
	return m.withRetries(ctx, body, func(ctx context.Context, ex *exchange) (*llm.Reply, bool, error) {
		return m.streamOnce(ctx, ex, onDelta)
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
	head, tail, err := m.skeleton(req.Tools, req.Output, stream)
	if err != nil {
		return nil, fail(err)
	}
	sys, msgs, err := m.messages(req)
	if err != nil {
		return nil, fail(err)
	}
	return assemble(head, sys, msgs, tail), nil
}

// attemptFunc makes one attempt; delivered reports whether part of the
// reply already reached the caller, which forbids a retry.
type attemptFunc func(ctx context.Context, ex *exchange) (reply *llm.Reply, delivered bool, err error)

func (m *Model) withRetries(ctx context.Context, body []byte, attempt attemptFunc) (*llm.Reply, error) {
	for n := 0; ; n++ {
		ex := &exchange{body: body, maxReply: m.cfg.MaxReplyBytes}
		reply, delivered, err := attempt(withExchange(ctx, ex), ex)
		if err == nil {
			return reply, nil
		}
		me := m.classify(ctx, err, ex)
		if !me.Retryable || delivered || n >= m.cfg.MaxRetries {
			return nil, me
		}
		delay := m.backoff(n)
		if ra := retryAfter(ex.header, time.Now()); ra > 0 {
			if ra > m.cfg.RetryMaxDelay {
				me.Message += fmt.Sprintf(" (the server asked to retry after %v, more than RetryMaxDelay %v)", ra, m.cfg.RetryMaxDelay)
				return nil, me
			}
			delay = ra
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < delay {
			return nil, me
		}
		if err := m.cfg.Sleep(ctx, delay); err != nil {
			werr := fmt.Errorf("%w while waiting to retry after: %w", err, me)
			return nil, &llm.ModelError{StatusCode: me.StatusCode, Message: werr.Error(), Err: werr}
		}
	}
}

// classify turns the failure of one attempt into an *llm.ModelError
// without the API key, with a hint when a 404 that is not OpenAI's
// suggests a wrong BaseURL.
func (m *Model) classify(ctx context.Context, err error, ex *exchange) *llm.ModelError {
	me := classify(ctx, err)
	if me.StatusCode == http.StatusNotFound && ex != nil && ex.status == http.StatusNotFound {
		if _, ok := errors.AsType[*sdk.RequestError](err); ok {
			me.Message += fmt.Sprintf(" (POST %s/chat/completions was not found: BaseURL should be the API root, which ends in /v1 for most servers)",
				strings.TrimRight(m.cfg.BaseURL, "/"))
		}
	}
	return m.redact.scrub(me)
}

// backoff returns the delay before retry n+1: RetryBaseDelay·2ⁿ capped at
// RetryMaxDelay, minus up to 25% jitter.
func (m *Model) backoff(n int) time.Duration {
	d := m.cfg.RetryBaseDelay
	for i := 0; i < n && d < m.cfg.RetryMaxDelay; i++ {
		d *= 2
	}
	d = min(d, m.cfg.RetryMaxDelay)
	var f float64
	if m.cfg.Rand != nil {
		m.randMu.Lock()
		f = m.cfg.Rand.Float64()
		m.randMu.Unlock()
	} else {
		f = rand.Float64()
	}
	return time.Duration(float64(d) * (1 - 0.25*f))
}

func (m *Model) streamOnce(ctx context.Context, ex *exchange, onDelta func(llm.Delta)) (reply *llm.Reply, delivered bool, err error) {
	stream, err := m.client.CreateChatCompletionStream(ctx, sdk.ChatCompletionRequest{Model: m.cfg.Model})
	if err != nil {
		return nil, false, err
	}
	defer stream.Close()
	// The transport aborts a read when ctx ends; closing the body as well
	// makes sure a blocked read returns whatever the HTTP client is.
	stop := context.AfterFunc(ctx, func() { stream.Close() })
	defer stop()

	acc := newStreamAcc()
	for {
		raw, err := stream.RecvRaw()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, delivered, err
		}
		if raw == nil {
			// go-openai read an error event it could not decode (its
			// "error" is not an object) and returned neither data nor
			// an error.
			return nil, delivered, streamEventError(ex)
		}
		if err := replyError(raw, ex.status); err != nil {
			return nil, delivered, err
		}
		var chunk sdk.ChatCompletionStreamResponse
		if err := json.Unmarshal(raw, &chunk); err != nil {
			chunk = sdk.ChatCompletionStreamResponse{}
			flat, ok := flattenContentParts(raw)
			if !ok || json.Unmarshal(flat, &chunk) != nil {
				return nil, delivered, fmt.Errorf("openai: a stream event is not a chunk (%w): %s", err, bodyText(raw))
			}
			raw = flat
		}
		for _, d := range acc.add(&chunk, extraReasoning(raw)) {
			delivered = true
			onDelta(d)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, delivered, err
	}
	if ex.tap != nil && ex.tap.errEvent != nil {
		// The stream ended after an error event go-openai could not
		// decode.
		return nil, delivered, streamEventError(ex)
	}
	if ex.whole {
		return wholeReply(ex, onDelta)
	}
	if !acc.finished {
		return nil, delivered, ErrStreamCut
	}
	if acc.finish == finishError {
		return nil, delivered, ErrReplyFailed
	}
	return acc.reply(), delivered, nil
}

// streamEventError is the error for an error event of a stream that
// go-openai could not decode, as a *openai.RequestError carrying the
// event's payload, so that classify reads its status and text.
func streamEventError(ex *exchange) error {
	payload := []byte("(an error event that could not be read)")
	if ex != nil && ex.tap != nil && ex.tap.errEvent != nil {
		payload = ex.tap.errEvent
	}
	status := http.StatusOK
	if ex != nil && ex.status != 0 {
		status = ex.status
	}
	return &sdk.RequestError{
		HTTPStatus:     fmt.Sprintf("%d %s", status, http.StatusText(status)),
		HTTPStatusCode: status,
		Err:            errors.New("openai: the stream sent an error event that is not in OpenAI's shape"),
		Body:           payload,
	}
}

// streamAcc assembles a reply from stream chunks.
type streamAcc struct {
	content, reasoning, refusal strings.Builder
	calls                       map[int]*callAcc
	slots                       map[int]int // server index → slot in calls now receiving its fragments
	lastIndex                   int
	finish                      sdk.FinishReason
	finished                    bool
	usage                       llm.Usage
	id                          string // the response id, from the first chunk that has one
}

type callAcc struct {
	index    int
	id, name string
	args     strings.Builder
}

func newStreamAcc() *streamAcc {
	return &streamAcc{calls: map[int]*callAcc{}, slots: map[int]int{}, lastIndex: -1}
}

// add folds chunk into the reply and returns the deltas it carries.
// reasoning is the chunk's "reasoning" field, which go-openai does not
// decode.
func (a *streamAcc) add(chunk *sdk.ChatCompletionStreamResponse, reasoning string) []llm.Delta {
	if chunk.Usage != nil {
		a.usage = convertUsage(*chunk.Usage)
	}
	if a.id == "" {
		a.id = chunk.ID
	}
	var out []llm.Delta
	for _, ch := range chunk.Choices {
		if ch.Index != 0 {
			continue
		}
		d := ch.Delta
		text := d.ReasoningContent
		if text == "" {
			text = reasoning
		}
		if d.Content != "" || text != "" {
			a.content.WriteString(d.Content)
			a.reasoning.WriteString(text)
			out = append(out, llm.Delta{Content: d.Content, Reasoning: text})
		}
		a.refusal.WriteString(d.Refusal)
		for _, tc := range d.ToolCalls {
			c := a.call(tc)
			if tc.ID != "" {
				c.id = tc.ID
			}
			if tc.Function.Name != "" {
				c.name = tc.Function.Name
			}
			c.args.WriteString(tc.Function.Arguments)
			out = append(out, llm.Delta{ToolCall: &llm.ToolCallDelta{
				Index: c.index, ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments,
			}})
		}
		if fc := d.FunctionCall; fc != nil {
			c := a.call(sdk.ToolCall{Index: new(0)})
			if fc.Name != "" {
				c.name = fc.Name
			}
			c.args.WriteString(fc.Arguments)
			out = append(out, llm.Delta{ToolCall: &llm.ToolCallDelta{Index: 0, Name: fc.Name, Arguments: fc.Arguments}})
		}
		if ch.FinishReason != "" && ch.FinishReason != sdk.FinishReasonNull {
			a.finish = ch.FinishReason
			a.finished = true
		}
	}
	return out
}

// call finds the accumulator for a tool-call fragment: by index when the
// server sends one, else by id, else the last call.
func (a *streamAcc) call(tc sdk.ToolCall) *callAcc {
	idx := -1
	switch {
	case tc.Index != nil:
		// Some servers (Ollama) send index 0 for every call of a parallel
		// batch: a fragment with a new id at a used index starts a new call,
		// and later fragments of that index go to it.
		idx = *tc.Index
		if slot, ok := a.slots[idx]; ok {
			idx = slot
		}
		if c, ok := a.calls[idx]; ok && tc.ID != "" && c.id != "" && c.id != tc.ID {
			next := 0
			for i := range a.calls {
				next = max(next, i+1)
			}
			a.slots[*tc.Index] = next
			idx = next
		}
	case tc.ID != "":
		for i, c := range a.calls {
			if c.id == tc.ID {
				idx = i
			}
		}
		if idx < 0 {
			idx = len(a.calls)
		}
	default:
		idx = max(a.lastIndex, 0)
	}
	a.lastIndex = idx
	c, ok := a.calls[idx]
	if !ok {
		c = &callAcc{index: idx}
		a.calls[idx] = c
	}
	return c
}

func (a *streamAcc) reply() *llm.Reply {
	msg := defs.Message{Role: defs.RoleAssistant, Content: a.content.String(), Reasoning: a.reasoning.String()}
	if msg.Content == "" {
		msg.Content = a.refusal.String()
	}
	idx := make([]int, 0, len(a.calls))
	for i := range a.calls {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		c := a.calls[i]
		id := c.id
		if id == "" {
			id = newCallID()
		}
		msg.ToolCalls = append(msg.ToolCalls, defs.ToolCall{ID: id, Name: c.name, Arguments: toolArguments(c.args.String())})
	}
	return &llm.Reply{Message: msg, Usage: a.usage, FinishReason: finishReason(a.finish, len(msg.ToolCalls) > 0), ID: a.id, Refusal: a.refusal.String()}
}
