package showtext

import (
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPrintable(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"plain text, ünïcode, \\ backslash", "plain text, ünïcode, \\ backslash"},
		{"a\nb\rc\td", `a\nb\rc\td`},
		{"\x1b[2J\x1b]0;title\x07", `\x1b[2J\x1b]0;title\x07`},
		{"\x00\x7f", `\x00\x7f`},
		{"\u0085\u009b", `\u0085\u009b`},
		{"\u202eevil\u2066", `\u202eevil\u2066`},
		{"bad \xff\xfe byte", `bad \xff\xfe byte`},
	} {
		assert.Equal(t, tt.want, Printable(tt.in), "Printable(%q)", tt.in)
	}
}

func TestCut(t *testing.T) {
	for _, tt := range []struct {
		in   string
		n    int
		want string
	}{
		{"héllo", 2, "hé…"},
		{"héllo", 5, "héllo"},
		{"日本語テキスト", 3, "日本語…"},
		{"abc", -1, "abc"},
		{"abc", 0, "…"},
	} {
		got := cut(tt.in, tt.n)
		assert.Equal(t, tt.want, got, "cut(%q, %d)", tt.in, tt.n)
		assert.True(t, utf8.ValidString(got), "cut(%q, %d) = %q", tt.in, tt.n, got)
	}
}

func FuzzPrintable(f *testing.F) {
	f.Add("\x1b]52;c;x\x07\r\u009b\xff")
	f.Fuzz(func(t *testing.T, s string) {
		p := Printable(s)
		require.True(t, utf8.ValidString(p), "Printable(%q) = %q: not UTF-8", s, p)
		for _, r := range p {
			require.False(t, unsafe(r, utf8.RuneLen(r)), "Printable(%q) = %q holds %U", s, p, r)
		}
	})
}
