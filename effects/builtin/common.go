package builtin

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/reprompt/reprompt/defs"
)

// Meta keys the built-in effects write on the messages they rewrite. Meta is
// never sent to a model.
const (
	// MetaTrimmed marks a tool result that was trimmed; its value is the
	// length of the original content in bytes. A message carrying it is
	// never trimmed again.
	MetaTrimmed = "trimmed"
	// MetaSummary marks the summary message written by Compact; its value is
	// the number of compactions folded into it ("1", "2", …).
	MetaSummary = "summary"
	// MetaSummaryText holds the summary text alone (without the labels and
	// file lists of Content), which the next compaction updates.
	MetaSummaryText = "summary_text"
	// MetaReadFiles and MetaModifiedFiles hold the files the summarised part
	// of the conversation read and modified, one per line, sorted.
	MetaReadFiles     = "read_files"
	MetaModifiedFiles = "modified_files"
	// MetaSplitTurn is "true" on a summary whose cut fell inside a turn.
	MetaSplitTurn = "split_turn"
	// MetaFailures holds the consecutive summarisation failures of Compact
	// when the summary was written, so a resumed run keeps its circuit
	// breaker.
	MetaFailures = "compact_failures"
)

// cursor remembers how much of a transcript an effect has looked at, so that
// the next step looks only at what is new. valid tells whether the
// transcript still starts with what was seen: the runtime only appends to a
// transcript between commits, and a commit (compaction, trimming) shortens
// the transcript or changes messages in it. valid compares a few messages
// spread over the seen part (the first, the last, and three between), in
// O(1).
type cursor struct {
	n    int
	seen [5]defs.Message // the messages at samples(n)
}

func samples(n int) [5]int { return [5]int{0, n / 3, n / 2, 2 * n / 3, n - 1} }

func (c *cursor) valid(msgs []defs.Message) bool {
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

func (c *cursor) set(msgs []defs.Message) {
	c.n = len(msgs)
	c.seen = [5]defs.Message{}
	if c.n > 0 {
		for k, i := range samples(c.n) {
			c.seen[k] = msgs[i]
		}
	}
}

func (c *cursor) reset() { c.set(nil) }

// sameMessage compares the parts of two messages that a rewrite changes. It
// is O(1) for the same message: string comparison stops at equal pointers.
func sameMessage(a, b defs.Message) bool {
	if a.Role != b.Role || a.ToolCallID != b.ToolCallID || len(a.ToolCalls) != len(b.ToolCalls) || a.Content != b.Content ||
		a.Meta[MetaTrimmed] != b.Meta[MetaTrimmed] || a.Meta[MetaSummary] != b.Meta[MetaSummary] {
		return false
	}
	return len(a.ToolCalls) == 0 || a.ToolCalls[0].ID == b.ToolCalls[0].ID
}

// withMeta returns m with Meta copied and key set to value; m's own map is
// not modified (transcript messages are shared and read-only).
func withMeta(m defs.Message, kv ...string) defs.Message {
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

// trimSaving is how many bytes trimContent(s, max) saves.
func trimSaving(s string, max int) int {
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

// trimMessage returns m with its content trimmed and marked.
func trimMessage(m defs.Message, max int) defs.Message {
	orig := len(m.Content)
	m.Content = trimContent(m.Content, max)
	return withMeta(m, MetaTrimmed, strconv.Itoa(orig))
}

// trimmable reports whether m is a tool result that trimming may cut: not
// an error, not trimmed already.
func trimmable(m *defs.Message) bool {
	return m.Role == defs.RoleTool && !m.IsError && m.Meta[MetaTrimmed] == ""
}

// clip cuts s to at most n bytes at a rune boundary, adding "…" when cut.
func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
