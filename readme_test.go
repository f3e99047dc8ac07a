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

	"github.com/google/go-cmp/cmp"
	"github.com/reprompt/reprompt/snapshots"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Go code blocks of README.md and of docs/*.md are compiled by
// TestDocsGoBlocksCompile, so a snippet cannot drift from the API. The
// rules, kept small on purpose, hold for each file on its own:
//
//   - A ```go block that starts with a package clause is a complete file and
//     is compiled as it is, in a package of its own.
//   - Any other ```go block is a fragment. It is compiled in the package of
//     the nearest complete file above it in the same Markdown file (so a
//     fragment can use the declarations of a program above it), or in a
//     package of its own when there is none.
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
// the Markdown file's lines through //line directives.
//
// The other tests here check what the README claims beside its code: its
// length, that .ci/run runs its commands, that its install steps name every
// nested module a user can import, and that it and doc.go list every package.

// readmeStd are the standard library packages a fragment may use unimported.
var readmeStd = []string{"context", "errors", "fmt", "io", "log", "os", "slices", "strconv", "strings", "testing", "time"}

var readmeDirective = regexp.MustCompile(`^<!--\s*readme-test:\s*(.*?)\s*-->\s*$`)

// readmeBlock is one ```go block of a README.
type readmeBlock struct {
	file     string // the Markdown file, as //line directives name it
	line     int    // line of the block's first code line
	src      string // the code
	decls    string // from a readme-test comment right before the fence
	declLine int    // line of that comment
}

func readmeGoBlocks(file, text string) ([]readmeBlock, error) {
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
		b := readmeBlock{file: file, line: n + 1}
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
			return nil, fmt.Errorf("%s:%d: code block never closed", file, start)
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
		code = fmt.Sprintf("//line %s:%d\n%s", b.file, b.line, b.src)
	} else {
		wrapped := fmt.Sprintf("package p\nfunc _() {\n//line %s:%d\n%s}\n", b.file, b.line, b.src)
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
		code = fmt.Sprintf("func _() {\n//line %s:%d\n%s%s}\n", b.file, b.line, b.src, strings.Join(uses, ""))
	}
	if b.decls != "" {
		code = fmt.Sprintf("//line %s:%d\n%s\n\n%s", b.file, b.declLine, b.decls, code)
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

// mdFile is a Markdown file whose Go blocks are compiled.
type mdFile struct{ name, text string }

// checkDocs writes the Go blocks of Markdown files into a temporary module
// and vets and builds them, all in one go command. It returns the number of
// blocks, or the go command's complaints, or why the blocks could not be
// laid out.
func checkDocs(t *testing.T, files ...mdFile) (int, error) {
	n, _, err := buildDocs(t, files...)
	return n, err
}

// buildDocs is checkDocs, and it returns the programs (package main) of the
// first file, built, in the order of their blocks.
func buildDocs(t *testing.T, files ...mdFile) (int, []string, error) {
	t.Helper()
	root, err := os.Getwd()
	if err != nil {
		return 0, nil, err
	}
	mods, pkgs, err := repoModules(root)
	if err != nil {
		return 0, nil, err
	}
	tmp := t.TempDir()
	var gomod, gosum strings.Builder
	gomod.WriteString("module readmetest\n\ngo 1.26.0\n\n")
	sums := map[string]bool{}
	for _, m := range mods {
		fmt.Fprintf(&gomod, "require %s v0.0.0\nreplace %s => %s\n", m.path, m.path, m.dir)
		data, err := os.ReadFile(filepath.Join(m.dir, "go.sum"))
		if err != nil && !os.IsNotExist(err) {
			return 0, nil, err
		}
		for l := range strings.SplitSeq(string(data), "\n") {
			if l != "" && !sums[l] {
				sums[l] = true
				gosum.WriteString(l + "\n")
			}
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, "go.mod"), []byte(gomod.String()), 0o644); err != nil {
		return 0, nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "go.sum"), []byte(gosum.String()), 0o644); err != nil {
		return 0, nil, err
	}
	total := 0
	var mains []string
	for fi, md := range files {
		blocks, err := readmeGoBlocks(md.name, md.text)
		if err != nil {
			return 0, nil, err
		}
		total += len(blocks)
		dir, pkg := "", "" // a package never spans two Markdown files
		for i, b := range blocks {
			name := fmt.Sprintf("md_L%d.go", b.line)
			content := fmt.Sprintf("//line %s:%d\n%s", b.file, b.line, b.src)
			f, perr := parser.ParseFile(token.NewFileSet(), "", b.src, parser.PackageClauseOnly)
			switch {
			case perr == nil: // a complete file
				dir, pkg = fmt.Sprintf("f%db%d", fi, i), f.Name.Name
				if fi == 0 && pkg == "main" {
					mains = append(mains, dir)
				}
			default:
				if dir == "" {
					dir, pkg = fmt.Sprintf("f%db%d", fi, i), "readme"
				}
				var isTest bool
				content, isTest, err = wrapFragment(b, pkg, pkgs)
				if err != nil {
					return 0, nil, fmt.Errorf("%s:%d: %v", b.file, b.line, err)
				}
				if isTest {
					name = strings.TrimSuffix(name, ".go") + "_test.go"
				}
			}
			if err := os.MkdirAll(filepath.Join(tmp, dir), 0o755); err != nil {
				return 0, nil, err
			}
			if err := os.WriteFile(filepath.Join(tmp, dir, name), []byte(content), 0o644); err != nil {
				return 0, nil, err
			}
		}
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return 0, nil, fmt.Errorf("this test needs the go command: %v", err)
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
			out = regexp.MustCompile(`f\d+b\d+/`).ReplaceAll(out, nil) // the //line names are relative
			return 0, nil, fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	for i, dir := range mains {
		mains[i] = filepath.Join(bin, dir)
	}
	return total, mains, nil
}

// TestDocsGoBlocksCompile compiles every ```go block of README.md and of
// docs/*.md (the rules are above readmeStd). The README must hold at least
// one: its program.
func TestDocsGoBlocksCompile(t *testing.T) {
	names, err := filepath.Glob("docs/*.md")
	require.NoError(t, err)
	names = append([]string{"README.md"}, names...)
	var files []mdFile
	for _, name := range names {
		text, err := os.ReadFile(name)
		require.NoError(t, err)
		files = append(files, mdFile{name, string(text)})
	}
	blocks, err := readmeGoBlocks("README.md", files[0].text)
	require.NoError(t, err)
	require.NotEmpty(t, blocks, "README.md has no ```go block: its program is gone")
	n, mains, err := buildDocs(t, files...)
	require.NoError(t, err)
	t.Logf("%d Go blocks of %s compile", n, strings.Join(names, ", "))

	// The README's program runs, offline, and prints what its golden file
	// holds: a conversation of two turns.
	require.NotEmpty(t, mains, "README.md has no program (package main)")
	out, err := exec.Command(mains[0]).CombinedOutput()
	require.NoError(t, err, "the README's program: %s", out)
	snapshots.Golden(t, "testdata/README.program.txt", out)
}

// TestReadmeCheckFails shows that the check above can fail: a statement at
// package level (as a snippet once had) and an undeclared name are reported
// at their lines, in the file they are in.
func TestReadmeCheckFails(t *testing.T) {
	for _, tc := range []struct{ name, file, text, want string }{
		{"statement at package level", "README.md", "# x\n\n```go\nctx := context.Background()\n\nfunc agent(p *prompt.Prompt) error {\n\t_ = ctx\n\treturn nil\n}\n```\n", "README.md:4: neither declarations nor statements"},
		{"undeclared name", "README.md", "```go\nrun(snapshots.Text(\"hi\"))\n```\n", "README.md:2: undefined: run"},
		{"complete file", "README.md", "```go\npackage main\n\nfunc main() { undefinedCall() }\n```\n", "README.md:4: undefined: undefinedCall"},
		{"in docs", "docs/x.md", "# x\n\n```go\nrun(snapshots.Text(\"hi\"))\n```\n", "docs/x.md:4: undefined: run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := checkDocs(t, mdFile{tc.file, tc.text})
			// The message is the contract here: it names the file and line.
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// readmeMaxLines is the README's budget: a guide, not a manual (issue 22).
const readmeMaxLines = 200

func TestReadmeLength(t *testing.T) {
	text, err := os.ReadFile("README.md")
	require.NoError(t, err)
	n := strings.Count(string(text), "\n")
	assert.LessOrEqual(t, n, readmeMaxLines, "README.md has %d lines; move details to a package's doc.go or to docs/", n)
}

// TestReadmeCommandsInCI checks that the go commands of the README's first
// ```sh block (run the quickstart, run the tests) are commands .ci/run
// runs as they are written: a line of .ci/run starts with the command, and
// no argument follows it but the flags CI adds to a run of the tests
// (ciFlags); then the line ends, or a redirection, a pipe, a ; or && or a
// comment follows.
func TestReadmeCommandsInCI(t *testing.T) {
	const ciFlags = `(?: -race| -count=\d+| -json)*`
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	ci, err := os.ReadFile(".ci/run")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(readme), "```sh\n")
	require.True(t, ok, "README.md has no ```sh block")
	block, _, ok := strings.Cut(rest, "```")
	require.True(t, ok)
	var cmds []string
	for l := range strings.SplitSeq(block, "\n") {
		l, _, _ = strings.Cut(l, "#")
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "go ") {
			cmds = append(cmds, l)
		}
	}
	require.Len(t, cmds, 2, "the README's first sh block: one command runs the quickstart, one the tests")
	for _, c := range cmds {
		re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(c) + ciFlags + `[ \t]*(?:$|[|;>#]|2>|&&)`)
		assert.True(t, re.MatchString(string(ci)), ".ci/run does not run the README's command %q as it is written", c)
	}
}

// TestReadmeInstallsNestedModules checks that the install steps give every
// nested module a user can import (internal ones excepted) its require and
// replace against the clone.
func TestReadmeInstallsNestedModules(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	root, err := os.Getwd()
	require.NoError(t, err)
	mods, _, err := repoModules(root)
	require.NoError(t, err)
	nested := 0
	for _, m := range mods {
		rel, err := filepath.Rel(root, m.dir)
		require.NoError(t, err)
		if rel == "." {
			continue
		}
		nested++
		step := fmt.Sprintf("go mod edit -require=%s@v0.0.0 -replace=%s=../reprompt/%s", m.path, m.path, filepath.ToSlash(rel))
		assert.True(t, strings.Contains(string(readme), step), "README.md's install steps miss the nested module %s: want the line\n%s", m.path, step)
	}
	assert.NotZero(t, nested, "no nested module found: the test checked nothing")
}

// packageDirs are the directories of the repository holding Go packages,
// relative to its root and slash-separated, the root itself excepted.
func packageDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		if strings.HasSuffix(name, ".go") && dir != "." && !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
		return nil
	})
	require.NoError(t, err)
	slices.Sort(dirs)
	return dirs
}

// TestPackageMaps checks that the package map of README.md (a table row a
// package: | `path` | what it is |) and the package list of doc.go (a list
// item a package: "  - path: what it is") each name every package of the
// repository once, and no package that is not there.
func TestPackageMaps(t *testing.T) {
	want := packageDirs(t)
	require.NotEmpty(t, want)
	for _, tc := range []struct{ file, re string }{
		{"README.md", "(?m)^\\| `([^`]+)` \\|"},
		{"doc.go", `(?m)^//\s+- ([\w./-]+): `},
	} {
		t.Run(tc.file, func(t *testing.T) {
			text, err := os.ReadFile(tc.file)
			require.NoError(t, err)
			var got []string
			for _, m := range regexp.MustCompile(tc.re).FindAllStringSubmatch(string(text), -1) {
				assert.NotContains(t, got, m[1], "%s names %s twice", tc.file, m[1])
				got = append(got, m[1])
			}
			slices.Sort(got)
			if diff := cmp.Diff(want, got); diff != "" {
				assert.Fail(t, tc.file+"'s package list differs from the repository's packages (-want +got): add a line for each new package, drop the lines of removed ones", diff)
			}
		})
	}
}
