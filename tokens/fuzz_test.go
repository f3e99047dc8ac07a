package tokens

import (
	"strings"
	"testing"

	"github.com/reprompt/reprompt/defs"
)

// FuzzText checks that no Counter panics, whatever the text (invalid UTF-8
// included), and that counts are positive exactly for non-empty text.
func FuzzText(f *testing.F) {
	for _, s := range []string{"", "hello world", "こんにちは世界", "\xff\xfe", "<|endoftext|>", strings.Repeat("a", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, c := range []Counter{O200k(), Cl100k(), Estimator{}} {
			n := c.Text(s)
			if (n > 0) != (s != "") {
				t.Errorf("%s: Text(%q) = %d", c.Name(), s, n)
			}
			if m := c.Message(defs.Message{Role: defs.RoleUser, Content: s}); m < MessageOverhead+n {
				t.Errorf("%s: Message with content %q = %d, below framing + %d", c.Name(), s, m, n)
			}
		}
	})
}
