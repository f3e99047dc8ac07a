package tokens

import (
	"strings"
	"testing"

	"github.com/reprompt/reprompt/defs"
	"github.com/stretchr/testify/assert"
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
			assert.Equal(t, s != "", n > 0, "%s: Text(%q) = %d", c.Name(), s, n)
			m := c.Message(defs.Message{Role: defs.RoleUser, Content: s})
			assert.GreaterOrEqual(t, m, MessageOverhead+n, "%s: Message with content %q = %d, below framing + %d", c.Name(), s, m, n)
		}
	})
}
