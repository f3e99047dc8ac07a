package openai

import (
	"context"
	"fmt"
	"log/slog"

	sdk "github.com/sashabaranov/go-openai"

	"github.com/reprompt/reprompt/internal/redact"
	"github.com/reprompt/reprompt/llm"
)

// Redacted replaces the API key wherever the adapter would otherwise show
// it: in error messages and bodies a server or proxy echoed it in, and in
// the formatted Config and Model.
const Redacted = redact.Text

// redactor removes the API key from text and errors.
type redactor struct{ secret redact.Secret }

func (r redactor) string(s string) string { return r.secret.String(s) }

// scrub removes the key from me and from every error it wraps (see
// redact.Secret.Scrub): go-openai's errors are edited in place.
func (r redactor) scrub(me *llm.ModelError) *llm.ModelError {
	return r.secret.Scrub(me, func(e error) bool {
		switch e := e.(type) {
		case *sdk.APIError:
			e.Message = r.string(e.Message)
			if e.Param != nil {
				p := r.string(*e.Param)
				e.Param = &p
			}
		case *sdk.RequestError:
			e.Body = r.secret.Bytes(e.Body)
			e.HTTPStatus = r.string(e.HTTPStatus)
		case *ReplyTooLargeError:
		default:
			return false
		}
		return true
	}, context.Canceled, context.DeadlineExceeded, ErrStreamCut)
}

// String returns the configuration for printing, with the API key replaced
// by Redacted. fmt's %v and %+v use it.
func (c Config) String() string { return redact.String("openai.Config", c.printable()) }

// GoString returns the configuration as a Go literal, with the API key
// replaced by Redacted. fmt's %#v uses it.
func (c Config) GoString() string { return redact.GoString("openai.Config", c.printable()) }

// Format implements fmt.Formatter so that no verb shows the API key: %#v
// prints GoString, every other verb String.
func (c Config) Format(f fmt.State, verb rune) { redact.Format(f, verb, c) }

// LogValue implements slog.LogValuer: the configuration as a group, with
// the API key replaced by Redacted when one is set.
func (c Config) LogValue() slog.Value {
	attrs := redact.ConfigAttrs(c.BaseURL, c.Model, c.APIKey)
	if c.Organization != "" {
		attrs = append(attrs, slog.String("organization", c.Organization))
	}
	attrs = append(attrs, slog.Int("max_retries", c.MaxRetries), slog.Int64("max_reply_bytes", c.MaxReplyBytes))
	return slog.GroupValue(attrs...)
}

// printableConfig is Config without its methods, for printing.
type printableConfig Config

func (c Config) printable() printableConfig {
	c.APIKey = redact.Key(c.APIKey)
	return printableConfig(c)
}

// String describes the model without its API key.
func (m *Model) String() string { return fmt.Sprintf("openai.Model{%v}", m.cfg) }

// GoString describes the model without its API key.
func (m *Model) GoString() string { return fmt.Sprintf("&openai.Model{cfg:%#v}", m.cfg) }

// Format implements fmt.Formatter so that no verb shows the API key.
func (m *Model) Format(f fmt.State, verb rune) { redact.Format(f, verb, m) }

// LogValue implements slog.LogValuer: the model's configuration, without
// its API key.
func (m *Model) LogValue() slog.Value { return m.cfg.LogValue() }
