// Package transcript holds what the built-in effects share to read a
// transcript step by step and to rewrite its messages: the Meta keys they
// write, a Cursor that remembers how much of a transcript was read, and
// the trimming of a tool result with its marker.
//
// Transcript messages are shared and read-only: every function here that
// changes a message returns a copy (with its own Meta map).
package transcript

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/reprompt/reprompt/defs"
)

// Meta keys the built-in effects write on the messages they rewrite;
// package builtin exports and documents them.
const (
	MetaTrimmed       = "trimmed"
	MetaSummary       = "summary"
	MetaSummaryText   = "summary_text"
	MetaReadFiles     = "read_files"
	MetaModifiedFiles = "modified_files"
	MetaSplitTurn     = "split_turn"
	MetaFailures      = "compact_failures"
)

// Cursor remembers how much of a transcript an effect has looked at, so that
// the next step looks only at what is new. Valid tells whether the
// transcript still starts with what was seen: the runtime only appends to a
// transcript between commits, and a commit (compaction, trimming) shortens
// the transcript or changes messages in it. Valid compares a few messages
// spread over the seen part (the first, the last, and three between), in
// O(1). The zero Cursor has seen nothing.
type Cursor struct {
	n    int
	seen [5]defs.Message // the messages at samples(n)
}

func samples(n int) [5]int { return [5]int{0, n / 3, n / 2, 2 * n / 3, n - 1} }

// N returns how many messages were seen.
func (c *Cursor) N() int { return c.n }

// Valid reports whether msgs still starts with the messages seen.
func (c *Cursor) Valid(msgs []defs.Message) bool {
	if c.n == 0 {
		return true
	}
	if len(msgs) < c.n {
		return false
	}
	for k, i := range samples(c.n) {
		if !sameMessage(msgs[i], c.seen[k]) {
			return false
		}
	}
	return true
}

// Set records msgs as seen.
func (c *Cursor) Set(msgs []defs.Message) {
	c.n = len(msgs)
	c.seen = [5]defs.Message{}
	if c.n > 0 {
		for k, i := range samples(c.n) {
			c.seen[k] = msgs[i]
		}
	}
}

// Reset forgets what was seen.
func (c *Cursor) Reset() { c.Set(nil) }

// sameMessage compares the parts of two messages that a rewrite changes. It
// is O(1) for the same message: string comparison stops at equal pointers.
func sameMessage(a, b defs.Message) bool {
	if a.Role != b.Role || a.ToolCallID != b.ToolCallID || len(a.ToolCalls) != len(b.ToolCalls) || a.Content != b.Content ||
		a.Meta[MetaTrimmed] != b.Meta[MetaTrimmed] || a.Meta[MetaSummary] != b.Meta[MetaSummary] {
		return false
	}
	return len(a.ToolCalls) == 0 || a.ToolCalls[0].ID == b.ToolCalls[0].ID
}

// WithMeta returns m with Meta copied and each key of kv (key, value, key,
// value, …) set to its value; m's own map is not modified (transcript
// messages are shared and read-only).
func WithMeta(m defs.Message, kv ...string) defs.Message {
	meta := make(map[string]string, len(m.Meta)+len(kv)/2)
	for k, v := range m.Meta {
		meta[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		meta[kv[i]] = kv[i+1]
	}
	m.Meta = meta
	return m
}

// trimMarker is what replaces the cut part of a tool result.
func trimMarker(cut, total int) string {
	return "\n[… trimmed " + strconv.Itoa(cut) + " of " + strconv.Itoa(total) + " characters]"
}

// trimContent cuts s to at most max bytes (at a rune boundary) and appends a
// marker. It returns s unchanged when it is not longer than max.
func trimContent(s string, max int) string {
	if len(s) <= max {
		return s
	}
	k := max
	for k > 0 && !utf8.RuneStart(s[k]) {
		k--
	}
	return s[:k] + trimMarker(len(s)-k, len(s))
}

// TrimSaving is how many bytes trimming s to max saves, the marker
// counted (zero or less when it saves nothing).
func TrimSaving(s string, max int) int {
	if len(s) <= max {
		return 0
	}
	k := max
	for k > 0 && !utf8.RuneStart(s[k]) {
		k--
	}
	marker := len("\n[… trimmed ") + digits(len(s)-k) + len(" of ") + digits(len(s)) + len(" characters]")
	return len(s) - k - marker
}

func digits(n int) int {
	d := 1
	for n >= 10 {
		n /= 10
		d++
	}
	return d
}

// TrimMessage returns m with its content cut to max bytes (at a rune
// boundary), followed by a marker saying how much was cut, and
// Meta[MetaTrimmed] set to the original length.
func TrimMessage(m defs.Message, max int) defs.Message {
	orig := len(m.Content)
	m.Content = trimContent(m.Content, max)
	return WithMeta(m, MetaTrimmed, strconv.Itoa(orig))
}

// Trimmable reports whether m is a tool result that trimming may cut: not
// an error, not trimmed already.
func Trimmable(m *defs.Message) bool {
	return m.Role == defs.RoleTool && !m.IsError && m.Meta[MetaTrimmed] == ""
}

// Clip trims the white space around s and cuts it to at most n bytes at a
// rune boundary, adding "…" when cut.
func Clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// OneLine joins the words of s with single spaces.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
