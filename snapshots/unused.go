package snapshots

import (
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

var (
	usedMu sync.Mutex
	used   = map[string]bool{} // absolute paths of golden files Run read or wrote
	roots  = map[string]bool{} // absolute golden directories Run used
)

func markUsed(dir, path string) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return
	}
	usedMu.Lock()
	defer usedMu.Unlock()
	used[abs] = true
	if root, err := filepath.Abs(dir); err == nil {
		roots[root] = true
	}
}

// CheckUnused runs the tests of m and returns the exit code for os.Exit. When
// every test passed and the run was not narrowed (-run, -skip, -short),
// it also reports the golden files that no call of Run read or wrote in
// the golden directories Run used and in DefaultDir, and then returns 1.
// Only files that start with a snapshot header are considered. Call it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(snapshots.CheckUnused(m)) }
//
// A test that skips before calling Run leaves its golden file unused.
// Run may be called from parallel tests; CheckUnused sees every call.
func CheckUnused(m *testing.M) int {
	code := m.Run()
	if code != 0 || narrowed() {
		return code
	}
	usedMu.Lock()
	dirs := []string{DefaultDir}
	for d := range roots {
		dirs = append(dirs, d)
	}
	usedCopy := make(map[string]bool, len(used))
	for k, v := range used {
		usedCopy[k] = v
	}
	usedMu.Unlock()
	unused := unusedGoldens(dirs, usedCopy)
	if len(unused) == 0 {
		return code
	}
	fmt.Fprintf(os.Stderr, "snapshots: golden files not used by any test (delete them, or rename them after their test): %d\n", len(unused))
	wd, _ := os.Getwd()
	for _, p := range unused {
		if rel, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(rel, "..") {
			p = rel
		}
		fmt.Fprintf(os.Stderr, "\t%s\n", p)
	}
	return 1
}

func narrowed() bool {
	if testing.Short() {
		return true
	}
	for _, name := range []string{"test.run", "test.skip", "test.list"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return true
		}
	}
	return false
}

// unusedGoldens returns the golden files (files named *.txtar whose first line is
// a snapshot header) under dirs whose absolute path is not in used, sorted, as
// absolute paths. Directories that do not exist are skipped.
func unusedGoldens(dirs []string, used map[string]bool) []string {
	var out []string
	seen := map[string]bool{}
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			continue
		}
		_ = filepath.WalkDir(abs, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || !strings.HasSuffix(p, ext) || seen[p] || used[p] {
				return nil
			}
			seen[p] = true
			if isGolden(p) {
				out = append(out, p)
			}
			return nil
		})
	}
	slices.Sort(out)
	return out
}

func isGolden(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	buf := make([]byte, len(headerPrefix))
	n, _ := io.ReadFull(f, buf)
	return string(buf[:n]) == headerPrefix
}
