package runtime

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestUnfence(t *testing.T) {
	tests := map[string]string{
		`{"a":1}`:                       `{"a":1}`,
		"  {\"a\":1}\n":                 `{"a":1}`,
		"```json\n{\"a\":1}\n```":       `{"a":1}`,
		"```\n[1,2]\n```\n":             `[1,2]`,
		"```{\"a\":1}```":               `{"a":1}`,
		"```JSON\n{\"a\":\"```\"}\n```": "{\"a\":\"```\"}",
		"not fenced ```":                "not fenced ```",
		"```":                           "```",
	}
	for in, want := range tests {
		assert.Equal(t, want, string(unfence(in)), "unfence(%q)", in)
	}
}

// FuzzUnfence: unfence never panics, and JSON that is not fenced comes
// back as it was, trimmed.
func FuzzUnfence(f *testing.F) {
	for _, s := range []string{"```json\n{}\n```", "{}", "```", "``````", "```\n", " [1] "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := unfence(s)
		if json.Valid([]byte(s)) && !strings.Contains(s, "```") {
			assert.Equal(t, strings.TrimSpace(s), string(out), "unfence(%q)", s)
		}
	})
}
