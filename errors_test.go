package reprompt_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// corePackages are the packages whose error messages start with what
// failed, never with their package's name (see "Errors" in doc.go). The
// adapters to outside systems (providers/openai, the mcp module) and the
// test helpers reporting into a *testing.T (snapshots) name themselves.
var corePackages = []string{
	"state", "defs", "llm", "effects", "effects/builtin", "prompt", "runtime", "session",
	"session/sqlite", "session/postgres", "tokens",
}

// TestErrorMessages checks the module's message rule (doc.go, "Errors") on
// the string literals that start messages: in core packages, an error made
// by errors.New or fmt.Errorf does not start with a package's name and a
// colon; anywhere, a panic with a literal message (a programmer error) does.
func TestErrorMessages(t *testing.T) {
	fset := token.NewFileSet()
	names := append(slices.Clone(corePackages), "reprompt", "snapshots", "sessiontest", "openai", "mcp")
	prefixed := func(s string) (string, bool) {
		name, _, ok := strings.Cut(s, ": ")
		if !ok || strings.ContainsAny(name, " \"%") {
			return "", false
		}
		for _, p := range names {
			if name == filepath.Base(p) {
				return name, true
			}
		}
		return "", false
	}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "examples" || d.Name() == "internal") && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		core := false
		for _, p := range corePackages {
			core = core || dir == p
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			msg, _ := strconv.Unquote(lit.Value)
			pos := fset.Position(lit.Pos())
			switch fun := call.Fun.(type) {
			case *ast.Ident:
				if fun.Name == "panic" {
					_, ok := prefixed(strings.ReplaceAll(msg, ".", ": "))
					assert.True(t, ok, "%s: panic(%q) does not start with its package's name (a programmer error names where it comes from)", pos, msg)
				}
			case *ast.SelectorExpr:
				x, _ := fun.X.(*ast.Ident)
				if x == nil || !(x.Name == "errors" && fun.Sel.Name == "New" || x.Name == "fmt" && fun.Sel.Name == "Errorf") {
					return true
				}
				name, ok := prefixed(msg)
				assert.False(t, ok && core, "%s: message %q starts with the package name %q: a core package's message starts with what failed", pos, msg, name)
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
}
