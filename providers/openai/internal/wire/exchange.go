package wire

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strings"
)

// Exchange records what one HTTP attempt sent and received, for the parts
// go-openai does not expose: the response status and headers of a failed
// call (for Retry-After), the body of a failed call, the raw body of a
// non-streamed reply (for fields go-openai does not decode, such as
// "reasoning"), and the error events of a stream that go-openai cannot
// decode.
//
// It travels to the Doer inside the request's context, so one Doer serves
// concurrent calls. The Doer runs on the goroutine of the call, so the
// fields need no locking.
type Exchange struct {
	// Body, if not nil, is sent instead of the body go-openai encoded.
	Body []byte
	// MaxReply bounds the bytes read from the response body; <= 0: none.
	MaxReply int64

	// Status and Header are the response's, once it arrived.
	Status int
	Header http.Header

	raw     []byte     // a non-streamed 2xx body, or a whole reply to a stream request
	whole   bool       // a stream request was answered with a whole JSON reply (in raw)
	errBody []byte     // the body of a failed response, cut at maxErrorBody
	tap     *streamTap // a streamed 2xx body
}

type exchangeKey struct{}

// maxErrorBody bounds what is kept of a failed response's body (within
// Exchange.MaxReply).
const maxErrorBody = 1 << 20

// Doer is the go-openai HTTPDoer of a Model: it sends the requests of
// Generate and Stream with Client, recording them in their Exchange.
type Doer struct {
	Client *http.Client
	// TooLarge makes the error of a reply past Exchange.MaxReply bytes
	// (openai's *ReplyTooLargeError); it must not be nil.
	TooLarge func(limit int64, streamed bool) error
}

func (d Doer) Do(req *http.Request) (*http.Response, error) {
	ex, _ := req.Context().Value(exchangeKey{}).(*Exchange)
	if ex == nil {
		return d.Client.Do(req)
	}
	if ex.Body != nil {
		body := ex.Body
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	resp, err := d.Client.Do(req)
	if err != nil {
		return resp, err
	}
	ex.Status = resp.StatusCode
	ex.Header = resp.Header
	if resp.StatusCode < http.StatusOK || resp.StatusCode >= http.StatusBadRequest {
		// go-openai reads the whole body of a failed response: keep it
		// bounded, and keep it for the error whatever its shape.
		limit := int64(maxErrorBody)
		if ex.MaxReply > 0 {
			limit = min(limit, ex.MaxReply)
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
		// reply (whatever its Content-Type says), which Stream reads
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
			ex.tap = &streamTap{r: resp.Body, limit: ex.MaxReply, tooLarge: d.TooLarge}
			resp.Body = ex.tap
			return resp, nil
		}
	}
	var raw []byte
	var rerr error
	if n := resp.ContentLength; n >= 0 && (ex.MaxReply <= 0 || n <= ex.MaxReply) {
		// The transport reads no more than the announced length.
		raw = make([]byte, n)
		_, rerr = io.ReadFull(body, raw)
	} else {
		if ex.MaxReply > 0 {
			body = io.LimitReader(body, ex.MaxReply+1)
		}
		raw, rerr = io.ReadAll(body)
	}
	resp.Body.Close()
	if rerr != nil {
		return nil, rerr
	}
	if ex.MaxReply > 0 && int64(len(raw)) > ex.MaxReply {
		return nil, d.TooLarge(ex.MaxReply, ex.whole)
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
// fails with the Doer's TooLarge error once more than limit bytes arrived
// (limit <= 0: no bound), and keeps the first error event of the stream
// ("data: {"error":…}"), which go-openai drops when its "error" is not an
// object, and ends there.
type streamTap struct {
	r        io.ReadCloser
	limit    int64
	tooLarge func(limit int64, streamed bool) error
	n        int64
	err      error

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
				t.err = t.tooLarge(t.limit, true)
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
