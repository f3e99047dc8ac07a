package snapshots

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goldenPath returns the golden file of the test named name: one directory
// level per subtest, characters that are unsafe in file names replaced by
// "_".
func goldenPath(dir, name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		p = strings.Map(func(r rune) rune {
			if r < ' ' || strings.ContainsRune(`<>:"\|?*`, r) {
				return '_'
			}
			return r
		}, p)
		if p == "" || p == "." || p == ".." {
			p = strings.ReplaceAll(p+"_", ".", "_")
		}
		parts[i] = p
	}
	return filepath.Join(dir, filepath.Join(parts...)+ext)
}

func envOn(name string) bool {
	switch strings.ToLower(os.Getenv(name)) {
	case "", "0", "false", "no", "off":
		return false
	}
	return true
}

// updateCommand returns the shell command that rewrites the golden files of
// the test named testName in the package in the current directory, for
// example
//
//	REPROMPT_UPDATE=1 go test ./examples/quickstart -run '^TestQuickstart$'
func updateCommand(testName string) string {
	var run []string
	for p := range strings.SplitSeq(testName, "/") {
		run = append(run, "^"+regexp.QuoteMeta(p)+"$")
	}
	return fmt.Sprintf("%s=1 go test %s -run %s", UpdateEnv, packageArg(), shellQuote(strings.Join(run, "/")))
}

// packageArg returns the current directory as a go test argument relative
// to the module root ("./pkg", or "." at the root).
func packageArg() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			rel, err := filepath.Rel(dir, wd)
			if err != nil || rel == "." {
				return "."
			}
			return "./" + filepath.ToSlash(rel)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "."
		}
		dir = parent
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func compareGolden(t testing.TB, dir, path string, got []byte) {
	t.Helper()
	markUsed(dir, path)
	checkGolden(t, path, got, "the run", func(want []byte) string {
		if h, _, _ := strings.Cut(string(want), "\n"); h != Header {
			return fmt.Sprintf("the file starts with %q, not %q: it was written by another version of package snapshots", h, Header)
		}
		return ""
	})
}

func writeGolden(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatalf("snapshots: %v", err)
		return
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatalf("snapshots: %v", err)
	}
}
