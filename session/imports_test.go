package session_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestImports keeps the session packages' layering: the core and the kit
// import only the standard library and the leaf packages, and each database
// driver is imported only by its own store, so that the core pulls in none.
func TestImports(t *testing.T) {
	const module = "github.com/reprompt/reprompt/"
	allowed := map[string][]string{
		".":           {"defs", "effects", "state"},
		"sessiontest": {"defs", "effects", "state", "session"},
	}
	drivers := map[string]string{ // import path prefix → the only package that may import it
		"modernc.org/sqlite":      "sqlite",
		"github.com/jackc/pgx/v5": "postgres",
	}
	fset := token.NewFileSet()
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && path != "..") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("..", filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		inSession := "" // the package's directory under session, "." for session itself
		switch {
		case rel == "session":
			inSession = "."
		case strings.HasPrefix(rel, "session/"):
			inSession = strings.TrimPrefix(rel, "session/")
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			for prefix, owner := range drivers {
				if (p == prefix || strings.HasPrefix(p, prefix+"/")) && rel != "session/"+owner {
					t.Errorf("%s imports %s, which only session/%s may import", path, p, owner)
				}
			}
			rules, ok := allowed[inSession]
			if !ok {
				continue
			}
			if !strings.Contains(strings.Split(p, "/")[0], ".") {
				continue // standard library
			}
			if !strings.HasPrefix(p, module) || !slices.Contains(rules, strings.TrimPrefix(p, module)) {
				t.Errorf("%s imports %s; session/%s may import only the standard library and %v", path, p, inSession, rules)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
