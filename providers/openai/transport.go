package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// exchange records what one HTTP attempt sent and received, for the parts
// go-openai does not expose: the response status and headers of a failed
// call (for Retry-After), the body of a failed call, the raw body of a
// non-streamed reply (for fields go-openai does not decode, such as
// "reasoning"), and the error events of a stream that go-openai cannot
// decode.
//
// It travels to the doer inside the request's context, so one doer serves
// concurrent calls. The doer runs on the goroutine of the call, so the
// fields need no locking.
type exchange struct {
	// body, if not nil, is sent instead of the body go-openai encoded.
	body []byte
	// maxReply bounds the bytes read from the response body; <= 0: none.
	maxReply int64

	status  int
	header  http.Header
	raw     []byte     // a non-streamed 2xx body, or a whole reply to a stream request
	whole   bool       // a stream request was answered with a whole JSON reply (in raw)
	errBody []byte     // the body of a failed response, cut at maxErrorBody
	tap     *streamTap // a streamed 2xx body
}

type exchangeKey struct{}

func withExchange(ctx context.Context, ex *exchange) context.Context {
	return context.WithValue(ctx, exchangeKey{}, ex)
}

// maxErrorBody bounds what is kept of a failed response's body (within
// Config.MaxReplyBytes).
const maxErrorBody = 1 << 20

// doer is the go-openai HTTPDoer: it wraps the configured *http.Client.
type doer struct {
	client *http.Client
}

func (d doer) Do(req *http.Request) (*http.Response, error) {
	ex, _ := req.Context().Value(exchangeKey{}).(*exchange)
	if ex == nil {
		return d.client.Do(req)
	}
	if ex.body != nil {
		body := ex.body
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return resp, err
	}
	ex.status = resp.StatusCode
	ex.header = resp.Header
	if resp.StatusCode < http.StatusOK || resp.StatusCode >= http.StatusBadRequest {
		// go-openai reads the whole body of a failed response: keep it
		// bounded, and keep it for the error whatever its shape.
		limit := int64(maxErrorBody)
		if ex.maxReply > 0 {
			limit = min(limit, ex.maxReply)
		}
		data, rerr := io.ReadAll(io.LimitReader(resp.Body, limit))
		resp.Body.Close()
		if rerr != nil {
			return nil, rerr
		}
		ex.errBody = data
		resp.Body = io.NopCloser(bytes.NewReader(data))
		return resp, nil
	}
	var body io.Reader = resp.Body
	if strings.Contains(req.Header.Get("Accept"), "text/event-stream") {
		// A server that ignored "stream": true answers with a whole JSON
		// reply (whatever its Content-Type says), which streamOnce reads
		// from ex.raw; go-openai gets an empty stream. A stream begins with
		// a field name or a comment, never with "{".
		br := bufio.NewReader(resp.Body)
		if firstNonSpace(br) == '{' {
			ex.whole = true
			body = br
		} else {
			resp.Body = readCloser{Reader: br, Closer: resp.Body}
		}
		if !ex.whole {
			ex.tap = &streamTap{r: resp.Body, limit: ex.maxReply}
			resp.Body = ex.tap
			return resp, nil
		}
	}
	var raw []byte
	var rerr error
	if n := resp.ContentLength; n >= 0 && (ex.maxReply <= 0 || n <= ex.maxReply) {
		// The transport reads no more than the announced length.
		raw = make([]byte, n)
		_, rerr = io.ReadFull(body, raw)
	} else {
		if ex.maxReply > 0 {
			body = io.LimitReader(body, ex.maxReply+1)
		}
		raw, rerr = io.ReadAll(body)
	}
	resp.Body.Close()
	if rerr != nil {
		return nil, rerr
	}
	if ex.maxReply > 0 && int64(len(raw)) > ex.maxReply {
		return nil, &ReplyTooLargeError{Limit: ex.maxReply, Streamed: ex.whole}
	}
	ex.raw = raw
	if ex.whole {
		raw = nil
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	return resp, nil
}

// firstNonSpace returns the first byte of r that is not white space,
// without consuming it, or 0 when r ends or fails first or only white
// space fills its buffer.
func firstNonSpace(r *bufio.Reader) byte {
	for i := 1; i <= r.Size(); i++ {
		b, err := r.Peek(i)
		if err != nil {
			return 0
		}
		switch c := b[i-1]; c {
		case ' ', '\t', '\r', '\n':
		default:
			return c
		}
	}
	return 0
}

type readCloser struct {
	io.Reader
	io.Closer
}

// maxEventLine bounds the error event a streamTap keeps.
const maxEventLine = 64 << 10

// streamTap is the body of a streamed reply as go-openai reads it. It
// fails with a *ReplyTooLargeError once more than limit bytes arrived
// (limit <= 0: no bound), and keeps the first error event of the stream
// ("data: {"error":…}"), which go-openai drops when its "error" is not an
// object, and ends there.
type streamTap struct {
	r     io.ReadCloser
	limit int64
	n     int64
	err   error

	line     []byte // the current line, up to maxEventLine bytes
	long     bool   // the current line is longer than that
	errEvent []byte // the payload of the first error event
}

func (t *streamTap) Read(p []byte) (int, error) {
	if t.err != nil {
		return 0, t.err
	}
	if t.limit > 0 {
		rem := t.limit - t.n
		if rem <= 0 {
			// At the cap: one more byte means the reply is too large.
			var one [1]byte
			n, err := t.r.Read(one[:])
			if n > 0 {
				t.err = &ReplyTooLargeError{Limit: t.limit, Streamed: true}
				return 0, t.err
			}
			return 0, err
		}
		if int64(len(p)) > rem {
			p = p[:rem]
		}
	}
	n, err := t.r.Read(p)
	t.n += int64(n)
	t.scan(p[:n])
	if t.errEvent != nil && err == nil {
		// An error event ends the stream: go-openai waits for the line
		// after it, which a server may never send.
		t.err = io.EOF
	}
	return n, err
}

func (t *streamTap) Close() error { return t.r.Close() }

var (
	dataPrefix  = []byte("data:")
	errorPrefix = []byte(`{"error":`)
)

// scan follows the lines of the stream and keeps the first error event.
func (t *streamTap) scan(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		part := p
		if i >= 0 {
			part = p[:i]
		}
		if !t.long {
			if len(t.line)+len(part) > maxEventLine {
				t.long = true
			} else {
				t.line = append(t.line, part...)
			}
		}
		if i < 0 {
			return
		}
		if t.errEvent == nil && !t.long {
			line := bytes.TrimSpace(t.line)
			if rest, ok := bytes.CutPrefix(line, dataPrefix); ok {
				rest = bytes.TrimSpace(rest)
				if bytes.HasPrefix(rest, errorPrefix) {
					t.errEvent = bytes.Clone(rest)
				}
			}
		}
		t.line, t.long = t.line[:0], false
		p = p[i+1:]
	}
}

// bodyPatch is what go-openai's request struct cannot express, because its
// fields are tagged omitempty or its validator refuses them: an explicit
// temperature or top_p of 0, and max_tokens and temperature for a model
// whose name go-openai takes for a reasoning model (Config.Reasoning set
// to ReasoningOff). (Messages whose content is the empty string are
// encoded with it by encodeMessage.)
type bodyPatch struct {
	fields map[string]any
}

func (p *bodyPatch) set(key string, v any) {
	if p.fields == nil {
		p.fields = map[string]any{}
	}
	p.fields[key] = v
}

func (p bodyPatch) apply(body map[string]json.RawMessage) error {
	for k, v := range p.fields {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		body[k] = b
	}
	return nil
}
