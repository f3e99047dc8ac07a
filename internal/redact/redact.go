// Package redact removes a provider adapter's API key from what it shows:
// texts, bodies a server or proxy echoed the key in, and the errors of a
// model call, which stay typed (what callers look for with errors.Is and
// errors.As stays reachable). Each adapter edits its SDK's own error types
// through Scrub's callback. The adapters' Config and Model print and log
// through it too (String, GoString, Format, ConfigAttrs), with the key
// shown as Text. Only the provider adapters import it.
package redact

import (
	"bytes"
	"errors"
	"strings"

	"github.com/reprompt/reprompt/llm"
)

// Text replaces the secret wherever it would show.
const Text = "[redacted]"

// Secret is a secret to remove; the empty Secret removes nothing.
type Secret string

// String returns s with every occurrence of the secret replaced by Text.
func (sec Secret) String(s string) string {
	if sec == "" || !strings.Contains(s, string(sec)) {
		return s
	}
	return strings.ReplaceAll(s, string(sec), Text)
}

// Bytes returns b with every occurrence of the secret replaced by Text (b
// itself when there is none).
func (sec Secret) Bytes(b []byte) []byte {
	if sec == "" || !bytes.Contains(b, []byte(sec)) {
		return b
	}
	return bytes.ReplaceAll(b, []byte(sec), []byte(Text))
}

// Scrub removes the secret from me and from every error it wraps. edit is
// called on each wrapped error: it removes the secret from the SDK's error
// types in place (each call makes its own) and reports whether the error
// must stay reachable. If me.Err's text still shows the secret, me.Err is
// replaced by an error with the redacted text that unwraps to the errors
// edit kept and to each of targets that me.Err is (the context's errors,
// the adapter's sentinels).
func (sec Secret) Scrub(me *llm.ModelError, edit func(error) bool, targets ...error) *llm.ModelError {
	if sec == "" {
		return me
	}
	me.Message = sec.String(me.Message)
	var keep []error
	walk(me.Err, func(e error) {
		if edit(e) {
			keep = append(keep, e)
		}
	})
	if me.Err != nil && strings.Contains(me.Err.Error(), string(sec)) {
		for _, target := range targets {
			if errors.Is(me.Err, target) {
				keep = append(keep, target)
			}
		}
		me.Err = &redactedError{text: sec.String(me.Err.Error()), errs: keep}
	}
	return me
}

// walk calls f on err and every error it wraps.
func walk(err error, f func(error)) {
	if err == nil {
		return
	}
	f(err)
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		walk(u.Unwrap(), f)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			walk(e, f)
		}
	}
}

// redactedError stands for an error whose text showed the secret.
type redactedError struct {
	text string
	errs []error
}

func (e *redactedError) Error() string   { return e.text }
func (e *redactedError) Unwrap() []error { return e.errs }
