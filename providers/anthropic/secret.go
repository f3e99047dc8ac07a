package anthropic

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/reprompt/reprompt/internal/redact"
	"github.com/reprompt/reprompt/llm"
)

// Redacted replaces the API key wherever the adapter would otherwise show
// it: in error messages and bodies a server or proxy echoed it in, in the
// request an *anthropic.Error keeps, and in the formatted Config and
// Model.
const Redacted = redact.Text

// redactor removes the API key from text and errors.
type redactor struct{ secret redact.Secret }

func (r redactor) string(s string) string { return r.secret.String(s) }

// scrub removes the key from me and from every error it wraps (see
// redact.Secret.Scrub): the SDK's *anthropic.Error is edited in place (its
// message, its body, the headers of the request it keeps).
func (r redactor) scrub(me *llm.ModelError) *llm.ModelError {
	return r.secret.Scrub(me, func(e error) bool {
		switch e := e.(type) {
		case *sdk.Error:
			r.scrubAPIError(e)
		case *ReplyTooLargeError:
		default:
			return false
		}
		return true
	}, context.Canceled, context.DeadlineExceeded, ErrStreamCut)
}

func (r redactor) scrubAPIError(e *sdk.Error) {
	e.Message = r.string(e.Message)
	if raw := e.RawJSON(); strings.Contains(raw, string(r.secret)) {
		status, req, resp, id, ws := e.StatusCode, e.Request, e.Response, e.RequestID, e.WorkspaceID
		_ = e.UnmarshalJSON([]byte(r.string(raw))) // a valid body stays valid; an invalid one is kept as it is
		e.StatusCode, e.Request, e.Response, e.RequestID, e.WorkspaceID = status, req, resp, id, ws
		e.Message = r.string(e.Message)
	}
	if e.Request != nil {
		e.Request = r.request(e.Request)
	}
	if e.Response != nil && e.Response.Request != nil {
		e.Response.Request = r.request(e.Response.Request)
	}
}

// request returns a shallow copy of req whose headers show no key.
func (r redactor) request(req *http.Request) *http.Request {
	c := *req
	c.Header = req.Header.Clone()
	for k, vs := range c.Header {
		for i, v := range vs {
			vs[i] = r.string(v)
		}
		c.Header[k] = vs
	}
	return &c
}

// String returns the configuration for printing, with the API key replaced
// by Redacted. fmt's %v and %+v use it.
func (c Config) String() string { return redact.String("anthropic.Config", c.printable()) }

// GoString returns the configuration as a Go literal, with the API key
// replaced by Redacted. fmt's %#v uses it.
func (c Config) GoString() string { return redact.GoString("anthropic.Config", c.printable()) }

// Format implements fmt.Formatter so that no verb shows the API key: %#v
// prints GoString, every other verb String.
func (c Config) Format(f fmt.State, verb rune) { redact.Format(f, verb, c) }

// LogValue implements slog.LogValuer: the configuration as a group, with
// the API key replaced by Redacted when one is set.
func (c Config) LogValue() slog.Value {
	attrs := redact.ConfigAttrs(c.BaseURL, c.Model, c.APIKey)
	attrs = append(attrs, slog.Int("max_tokens", c.MaxTokens), slog.Int("max_retries", c.MaxRetries), slog.Int64("max_reply_bytes", c.MaxReplyBytes))
	return slog.GroupValue(attrs...)
}

// printableConfig is Config without its methods, for printing.
type printableConfig Config

func (c Config) printable() printableConfig {
	c.APIKey = redact.Key(c.APIKey)
	return printableConfig(c)
}

// String describes the model without its API key.
func (m *Model) String() string { return fmt.Sprintf("anthropic.Model{%v}", m.cfg) }

// GoString describes the model without its API key.
func (m *Model) GoString() string { return fmt.Sprintf("&anthropic.Model{cfg:%#v}", m.cfg) }

// Format implements fmt.Formatter so that no verb shows the API key.
func (m *Model) Format(f fmt.State, verb rune) { redact.Format(f, verb, m) }

// LogValue implements slog.LogValuer: the model's configuration, without
// its API key.
func (m *Model) LogValue() slog.Value { return m.cfg.LogValue() }
