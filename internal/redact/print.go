package redact

import (
	"fmt"
	"log/slog"
	"strings"
)

// Key returns what an adapter shows of its API key: Text for a key, ""
// for none.
func Key(key string) string {
	if key == "" {
		return ""
	}
	return Text
}

// String returns v as %+v prints it, named name ("openai.Config"): v is
// an adapter's printable copy of its Config, a type without methods whose
// key Key replaced.
func String(name string, v any) string {
	return strings.Replace(fmt.Sprintf("%+v", v), "{", name+"{", 1)
}

// GoString returns v as %#v prints it, named name instead of its own
// type's name (see String).
func GoString(name string, v any) string {
	return strings.Replace(fmt.Sprintf("%#v", v), fmt.Sprintf("%T{", v), name+"{", 1)
}

// Printer is what an adapter's Config and Model print with.
type Printer interface {
	fmt.Stringer
	fmt.GoStringer
}

// Format implements fmt.Formatter for v so that no verb shows what v
// hides: %#v prints v.GoString(), every other verb v.String().
func Format(f fmt.State, verb rune, v Printer) {
	if verb == 'v' && f.Flag('#') {
		fmt.Fprint(f, v.GoString())
		return
	}
	fmt.Fprint(f, v.String())
}

// ConfigAttrs returns the first attributes of an adapter's Config as
// slog shows it: base_url, model, and api_key (Text) when a key is set.
func ConfigAttrs(baseURL, model, key string) []slog.Attr {
	attrs := []slog.Attr{
		slog.String("base_url", baseURL),
		slog.String("model", model),
	}
	if key != "" {
		attrs = append(attrs, slog.String("api_key", Text))
	}
	return attrs
}
