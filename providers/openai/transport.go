package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// exchange records what one HTTP attempt sent and received, for the parts
// go-openai does not expose: the response status and headers of a failed
// call (for Retry-After), and the raw body of a non-streamed reply (for
// fields go-openai does not decode, such as "reasoning").
//
// It travels to the doer inside the request's context, so one doer serves
// concurrent calls. The doer runs on the goroutine of the call, so the
// fields need no locking.
type exchange struct {
	// patch, if not nil, rewrites the JSON request body before it is sent.
	patch func(body map[string]json.RawMessage) error

	status int
	header http.Header
	raw    []byte
}

type exchangeKey struct{}

func withExchange(ctx context.Context, ex *exchange) context.Context {
	return context.WithValue(ctx, exchangeKey{}, ex)
}

// maxRawBody bounds the non-streamed response bodies kept for decoding.
const maxRawBody = 32 << 20

// doer is the go-openai HTTPDoer: it wraps the configured *http.Client.
type doer struct {
	client *http.Client
}

func (d doer) Do(req *http.Request) (*http.Response, error) {
	ex, _ := req.Context().Value(exchangeKey{}).(*exchange)
	if ex == nil {
		return d.client.Do(req)
	}
	if ex.patch != nil && req.Body != nil {
		if err := patchBody(req, ex.patch); err != nil {
			return nil, err
		}
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return resp, err
	}
	ex.status = resp.StatusCode
	ex.header = resp.Header.Clone()
	streaming := strings.Contains(req.Header.Get("Accept"), "text/event-stream")
	if !streaming && resp.StatusCode >= 200 && resp.StatusCode < 300 {
		raw, rerr := io.ReadAll(io.LimitReader(resp.Body, maxRawBody))
		resp.Body.Close()
		if rerr != nil {
			return nil, rerr
		}
		ex.raw = raw
		resp.Body = io.NopCloser(bytes.NewReader(raw))
	}
	return resp, nil
}

// patchBody applies patch to the JSON object in req's body.
func patchBody(req *http.Request, patch func(map[string]json.RawMessage) error) error {
	b, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return fmt.Errorf("patching request body: %w", err)
	}
	if err := patch(obj); err != nil {
		return fmt.Errorf("patching request body: %w", err)
	}
	if b, err = json.Marshal(obj); err != nil {
		return fmt.Errorf("patching request body: %w", err)
	}
	req.ContentLength = int64(len(b))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	req.Body, _ = req.GetBody()
	return nil
}

// bodyPatch is what go-openai's request struct cannot express, because its
// fields are tagged omitempty or its validator refuses them: an explicit
// temperature or top_p of 0, max_tokens and temperature for a model whose
// name go-openai takes for a reasoning model (Config.Reasoning set to
// ReasoningOff), and messages whose content is the empty string (content is
// required for user, system and tool messages).
type bodyPatch struct {
	fields       map[string]any
	emptyContent []int // message indices
}

func (p *bodyPatch) set(key string, v any) {
	if p.fields == nil {
		p.fields = map[string]any{}
	}
	p.fields[key] = v
}

func (p bodyPatch) empty() bool {
	return len(p.fields) == 0 && len(p.emptyContent) == 0
}

func (p bodyPatch) apply(body map[string]json.RawMessage) error {
	for k, v := range p.fields {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		body[k] = b
	}
	if len(p.emptyContent) == 0 {
		return nil
	}
	var msgs []map[string]json.RawMessage
	if err := json.Unmarshal(body["messages"], &msgs); err != nil {
		return err
	}
	for _, i := range p.emptyContent {
		if i < len(msgs) {
			msgs[i]["content"] = json.RawMessage(`""`)
		}
	}
	b, err := json.Marshal(msgs)
	if err != nil {
		return err
	}
	body["messages"] = b
	return nil
}
