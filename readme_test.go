package reprompt_test

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The README's Go code blocks are compiled by TestReadmeGoBlocksCompile, so
// a snippet cannot drift from the API. The rules, kept small on purpose:
//
//   - A ```go block that starts with a package clause is a complete file and
//     is compiled as it is, in a package of its own.
//   - Any other ```go block is a fragment. It is compiled in the package of
//     the nearest complete file above it (so "Testing a prompt" can use the
//     counter of "A prompt"), or in a package of its own when there is none.
//     A fragment of top-level declarations is a file of that package (a
//     _test.go file when it declares a TestXxx function); a fragment of
//     statements becomes the body of `func _() { … }`, followed by `_ = v`
//     for each variable it declares at its top level.
//   - A fragment gets the imports its qualified names need: the packages of
//     this repository (and of nested modules) by package name, and a few of
//     the standard library (readmeStd). A name declared in the fragment is
//     never taken for a package.
//   - Names a fragment uses without declaring are given on the line right
//     before its fence, as declarations in an HTML comment, which GitHub
//     does not show:
//
//     <!-- readme-test: var dir string -->
//
// Everything is vetted (which type-checks tests too) and built in a
// temporary module that requires this one (and its nested modules) through
// replace directives, with the build cache of the test run. Errors point at
// README.md lines through //line directives.

// readmeStd are the standard library packages a fragment may use unimported.
var readmeStd = []string{"context", "errors", "fmt", "io", "log", "os", "slices", "strconv", "strings", "testing", "time"}

var readmeDirective = regexp.MustCompile(`^<!--\s*readme-test:\s*(.*?)\s*-->\s*$`)

// readmeBlock is one ```go block of a README.
type readmeBlock struct {
	line     int    // README line of the block's first code line
	src      string // the code
	decls    string // from a readme-test comment right before the fence
	declLine int    // README line of that comment
}

func readmeGoBlocks(text string) ([]readmeBlock, error) {
	var blocks []readmeBlock
	sc := bufio.NewScanner(strings.NewReader(text))
	n := 0
	prev := ""
	for sc.Scan() {
		n++
		line := sc.Text()
		fence := strings.TrimSpace(line)
		if !strings.HasPrefix(fence, "```") {
			prev = line
			continue
		}
		info := strings.Fields(strings.TrimPrefix(fence, "```"))
		isGo := len(info) > 0 && info[0] == "go"
		b := readmeBlock{line: n + 1}
		if m := readmeDirective.FindStringSubmatch(prev); m != nil {
			b.decls, b.declLine = m[1], n-1
		}
		start := n
		var body []string
		closed := false
		for sc.Scan() {
			n++
			if strings.TrimSpace(sc.Text()) == "```" {
				closed = true
				break
			}
			body = append(body, sc.Text())
		}
		if !closed {
			return nil, fmt.Errorf("README.md:%d: code block never closed", start)
		}
		if isGo {
			b.src = strings.Join(body, "\n") + "\n"
			blocks = append(blocks, b)
		}
		prev = ""
	}
	return blocks, sc.Err()
}

// repoModule is a module of this repository: the root or a nested one.
type repoModule struct{ path, dir string }

// walkRepo calls fn for each file of the repository outside hidden,
// testdata and internal directories, with its path, directory and name.
func walkRepo(root string, fn func(path, dir, name string) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "internal") {
				return filepath.SkipDir
			}
			return nil
		}
		return fn(path, filepath.Dir(path), name)
	})
}

// repoModules finds the go.mod files of the repository and the importable
// packages they hold, by package name.
func repoModules(root string) (mods []repoModule, pkgs map[string][]string, err error) {
	pkgs = map[string][]string{}
	for _, std := range readmeStd {
		pkgs[filepath.Base(std)] = []string{std}
	}
	modOf := map[string]string{} // dir → module path
	err = walkRepo(root, func(path, dir, name string) error {
		if name == "go.mod" {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for l := range strings.SplitSeq(string(data), "\n") {
				if f := strings.Fields(l); len(f) == 2 && f[0] == "module" {
					mods = append(mods, repoModule{f[1], dir})
					modOf[dir] = f[1]
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	// Packages: walked again now that every module is known.
	seen := map[string]bool{}
	err = walkRepo(root, func(path, dir, name string) error {
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || seen[dir] {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.PackageClauseOnly)
		if err != nil || f.Name.Name == "main" {
			return nil
		}
		seen[dir] = true
		for m := dir; ; m = filepath.Dir(m) {
			if mp, ok := modOf[m]; ok {
				rel, _ := filepath.Rel(m, dir)
				pkgs[f.Name.Name] = append(pkgs[f.Name.Name], strings.TrimSuffix(mp+"/"+filepath.ToSlash(rel), "/."))
				break
			}
			if m == root || m == filepath.Dir(m) {
				break
			}
		}
		return nil
	})
	return mods, pkgs, err
}

// declaredNames are the names a fragment declares anywhere: those are not
// packages even when a package has the same name.
func declaredNames(f *ast.File) map[string]bool {
	names := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if n.Tok == token.DEFINE {
				for _, l := range n.Lhs {
					if id, ok := l.(*ast.Ident); ok {
						names[id.Name] = true
					}
				}
			}
		case *ast.ValueSpec:
			for _, id := range n.Names {
				names[id.Name] = true
			}
		case *ast.TypeSpec:
			names[n.Name.Name] = true
		case *ast.FuncDecl:
			names[n.Name.Name] = true
		case *ast.Field:
			for _, id := range n.Names {
				names[id.Name] = true
			}
		case *ast.RangeStmt:
			for _, e := range []ast.Expr{n.Key, n.Value} {
				if id, ok := e.(*ast.Ident); ok && n.Tok == token.DEFINE {
					names[id.Name] = true
				}
			}
		}
		return true
	})
	return names
}

// wrapFragment turns a fragment into a file of package pkg, and says
// whether it is a test file.
func wrapFragment(b readmeBlock, pkg string, pkgs map[string][]string) (file string, isTest bool, err error) {
	var code string
	fset := token.NewFileSet()
	if _, perr := parser.ParseFile(fset, "", "package p\n"+b.src, 0); perr == nil {
		code = fmt.Sprintf("//line README.md:%d\n%s", b.line, b.src)
	} else {
		wrapped := fmt.Sprintf("package p\nfunc _() {\n//line README.md:%d\n%s}\n", b.line, b.src)
		f, perr := parser.ParseFile(fset, "", wrapped, 0)
		if perr != nil {
			return "", false, fmt.Errorf("neither declarations nor statements: %v", perr)
		}
		var uses []string
		for _, st := range f.Decls[0].(*ast.FuncDecl).Body.List {
			switch st := st.(type) {
			case *ast.AssignStmt:
				if st.Tok == token.DEFINE {
					for _, l := range st.Lhs {
						if id, ok := l.(*ast.Ident); ok && id.Name != "_" {
							uses = append(uses, "\t_ = "+id.Name+"\n")
						}
					}
				}
			case *ast.DeclStmt:
				for _, s := range st.Decl.(*ast.GenDecl).Specs {
					if vs, ok := s.(*ast.ValueSpec); ok {
						for _, id := range vs.Names {
							uses = append(uses, "\t_ = "+id.Name+"\n")
						}
					}
				}
			}
		}
		code = fmt.Sprintf("func _() {\n//line README.md:%d\n%s%s}\n", b.line, b.src, strings.Join(uses, ""))
	}
	if b.decls != "" {
		code = fmt.Sprintf("//line README.md:%d\n%s\n\n%s", b.declLine, b.decls, code)
	}
	f, err := parser.ParseFile(fset, "", "package p\n"+code, 0)
	if err != nil {
		return "", false, err
	}
	declared := declaredNames(f)
	var imports []string
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok || declared[id.Name] {
			return true
		}
		paths := pkgs[id.Name]
		switch {
		case len(paths) > 1:
			err = fmt.Errorf("%s names %d packages (%s): write this block as a complete file", id.Name, len(paths), strings.Join(paths, ", "))
		case len(paths) == 1 && !slices.Contains(imports, paths[0]):
			imports = append(imports, paths[0])
		}
		return true
	})
	if err != nil {
		return "", false, err
	}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && strings.HasPrefix(fd.Name.Name, "Test") {
			isTest = true
		}
	}
	slices.Sort(imports)
	var sb strings.Builder
	fmt.Fprintf(&sb, "package %s\n\n", pkg)
	for _, p := range imports {
		fmt.Fprintf(&sb, "import %q\n", p)
	}
	sb.WriteString("\n" + code)
	return sb.String(), isTest, nil
}

// checkReadme writes the Go blocks of a README into a temporary module and
// vets and builds them. It returns the go command's complaints, or why the
// blocks could not be laid out.
func checkReadme(t *testing.T, text string) (int, error) {
	t.Helper()
	root, err := os.Getwd()
	if err != nil {
		return 0, err
	}
	blocks, err := readmeGoBlocks(text)
	if err != nil {
		return 0, err
	}
	mods, pkgs, err := repoModules(root)
	if err != nil {
		return 0, err
	}
	tmp := t.TempDir()
	var gomod, gosum strings.Builder
	gomod.WriteString("module readmetest\n\ngo 1.26.0\n\n")
	sums := map[string]bool{}
	for _, m := range mods {
		fmt.Fprintf(&gomod, "require %s v0.0.0\nreplace %s => %s\n", m.path, m.path, m.dir)
		data, err := os.ReadFile(filepath.Join(m.dir, "go.sum"))
		if err != nil && !os.IsNotExist(err) {
			return 0, err
		}
		for l := range strings.SplitSeq(string(data), "\n") {
			if l != "" && !sums[l] {
				sums[l] = true
				gosum.WriteString(l + "\n")
			}
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, "go.mod"), []byte(gomod.String()), 0o644); err != nil {
		return 0, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "go.sum"), []byte(gosum.String()), 0o644); err != nil {
		return 0, err
	}
	dir, pkg := "", ""
	for i, b := range blocks {
		name := fmt.Sprintf("readme_L%d.go", b.line)
		content := fmt.Sprintf("//line README.md:%d\n%s", b.line, b.src)
		f, perr := parser.ParseFile(token.NewFileSet(), "", b.src, parser.PackageClauseOnly)
		switch {
		case perr == nil: // a complete file
			dir, pkg = fmt.Sprintf("block%d", i), f.Name.Name
		default:
			if dir == "" {
				dir, pkg = fmt.Sprintf("block%d", i), "readme"
			}
			var isTest bool
			content, isTest, err = wrapFragment(b, pkg, pkgs)
			if err != nil {
				return 0, fmt.Errorf("README.md:%d: %v", b.line, err)
			}
			if isTest {
				name = strings.TrimSuffix(name, ".go") + "_test.go"
			}
		}
		if err := os.MkdirAll(filepath.Join(tmp, dir), 0o755); err != nil {
			return 0, err
		}
		if err := os.WriteFile(filepath.Join(tmp, dir, name), []byte(content), 0o644); err != nil {
			return 0, err
		}
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return 0, fmt.Errorf("this test needs the go command: %v", err)
	}
	var flags []string
	for _, f := range strings.Fields(os.Getenv("GOFLAGS")) {
		if !strings.HasPrefix(f, "-mod=") {
			flags = append(flags, f)
		}
	}
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS="+strings.Join(append(flags, "-mod=mod"), " "))
	bin := filepath.Join(tmp, "_bin") + string(filepath.Separator) // outside ./..., as it starts with _
	for _, args := range [][]string{{"vet", "./..."}, {"build", "-o", bin, "./..."}} {
		cmd := exec.Command(goBin, args...)
		cmd.Dir, cmd.Env = tmp, env
		if out, err := cmd.CombinedOutput(); err != nil {
			out = regexp.MustCompile(`block\d+/README\.md`).ReplaceAll(out, []byte("README.md"))
			return 0, fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return len(blocks), nil
}

// TestReadmeGoBlocksCompile compiles every ```go block of README.md (the
// rules are above readmeStd).
func TestReadmeGoBlocksCompile(t *testing.T) {
	text, err := os.ReadFile("README.md")
	require.NoError(t, err)
	n, err := checkReadme(t, string(text))
	require.NoError(t, err)
	require.NotZero(t, n, "README.md has no ```go block: the test checked nothing")
	t.Logf("%d Go blocks of README.md compile", n)
}

// TestReadmeCheckFails shows that the check above can fail: a statement at
// package level (as the Long runs snippet once had) and an undeclared name
// are reported at their README lines.
func TestReadmeCheckFails(t *testing.T) {
	for _, tc := range []struct{ name, readme, want string }{
		{"statement at package level", "# x\n\n```go\nctx := context.Background()\n\nfunc agent(p *prompt.Prompt) error {\n\t_ = ctx\n\treturn nil\n}\n```\n", "README.md:4: neither declarations nor statements"},
		{"undeclared name", "```go\nrun(snapshots.Text(\"hi\"))\n```\n", "README.md:2: undefined: run"},
		{"complete file", "```go\npackage main\n\nfunc main() { undefinedCall() }\n```\n", "README.md:4: undefined: undefinedCall"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := checkReadme(t, tc.readme)
			// The message is the contract here: it names the README line.
			require.ErrorContains(t, err, tc.want, "got %v, want an error containing %q", err, tc.want)
		})
	}
}
