package tokens

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
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

// TestImports writes down the layering: tokens sits under the runtime and
// imports only the standard library, defs and the tokenizer.
func TestImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{
		"github.com/reprompt/reprompt/defs":   true,
		"github.com/tiktoken-go/tokenizer":    true,
		"github.com/google/go-cmp/cmp":        true, // tests only
		"github.com/reprompt/reprompt/tokens": true, // examples
	}
	for _, name := range files {
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			std := !strings.Contains(strings.SplitN(path, "/", 2)[0], ".")
			test := strings.HasSuffix(name, "_test.go")
			if !std && !allowed[path] || (path == "github.com/google/go-cmp/cmp" || path == "github.com/reprompt/reprompt/tokens") && !test {
				t.Errorf("%s imports %s", name, path)
			}
		}
	}
}
