package showtext

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Printable returns s safe to write to a terminal: every control character
// escaped as Go writes it in a string literal (\n, \r, \t, \x1b, \u0085),
// and so are the bidirectional formatting characters (\u202e), which
// reorder what a terminal shows, and each byte that is not UTF-8 (\xff).
// Printable characters, backslashes included, are kept as they are. A
// stored message or tool result then cannot move the cursor, clear the
// screen, set the window's title or write to the clipboard (escape and OSC
// sequences), nor overwrite a line (a carriage return).
func Printable(s string) string {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if unsafe(r, n) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s // the common case: nothing to escape, no copy
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case !unsafe(r, n):
			b.WriteString(s[i : i+n])
		case n == 1 && r == utf8.RuneError:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += n
	}
	return b.String()
}

// unsafe reports whether the rune r of n bytes must be escaped.
func unsafe(r rune, n int) bool {
	switch {
	case r == utf8.RuneError && n == 1: // not UTF-8
		return true
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f: // C0, DEL, C1
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069: // bidirectional
		return true
	}
	return false
}

// cut returns s cut to at most n characters (runes), with "…" when cut; a
// negative n keeps it whole.
func cut(s string, n int) string {
	if n < 0 || len(s) <= n {
		return s
	}
	i := 0
	for k := 0; k < n; k++ {
		if i >= len(s) {
			return s
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	if i >= len(s) {
		return s
	}
	return s[:i] + "…"
}
