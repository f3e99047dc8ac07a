package runtime

import (
	"encoding/json"
	"strings"
	"testing"
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
		if got := string(unfence(in)); got != want {
			t.Errorf("unfence(%q) = %q, want %q", in, got, want)
		}
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
		if json.Valid([]byte(s)) && !strings.Contains(s, "```") && string(out) != strings.TrimSpace(s) {
			t.Errorf("unfence(%q) = %q", s, out)
		}
	})
}
