package snapshots

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
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
	update, ci := envOn(UpdateEnv), envOn(CIEnv)
	cmd := updateCommand(t.Name())
	if update && ci {
		t.Fatalf("snapshots: %s and %s are both set: golden files are never written on CI (%s). Update them locally and commit them", UpdateEnv, CIEnv, path)
		return
	}
	want, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		switch {
		case update:
			writeGolden(t, path, got)
			t.Logf("snapshots: created %s", path)
		case ci:
			t.Fatalf("snapshots: golden file %s is missing, and %s is set: it is not created on CI. Create it locally with\n\t%s\nand commit it", path, CIEnv, cmd)
		default:
			t.Fatalf("snapshots: golden file %s is missing. Create it with\n\t%s", path, cmd)
		}
		return
	}
	if err != nil {
		t.Fatalf("snapshots: %v", err)
		return
	}
	want = bytes.ReplaceAll(want, []byte("\r\n"), []byte("\n"))
	if bytes.Equal(want, got) {
		return
	}
	if update {
		writeGolden(t, path, got)
		t.Logf("snapshots: updated %s", path)
		return
	}
	var msg strings.Builder
	fmt.Fprintf(&msg, "snapshots: %s does not match the run (-want +got):\n", path)
	if h, _, _ := strings.Cut(string(want), "\n"); h != Header {
		fmt.Fprintf(&msg, "the file starts with %q, not %q: it was written by another version of package snapshots\n", h, Header)
	}
	msg.WriteString(diffSections(string(want), string(got)))
	fmt.Fprintf(&msg, "If the change is intended, update the golden file with\n\t%s", cmd)
	t.Errorf("%s", msg.String())
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
