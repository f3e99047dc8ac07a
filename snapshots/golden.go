package snapshots

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
)

// Header is the first line of every golden file. The number is the version
// of the format; a file with another header fails the comparison and must be
// regenerated.
const Header = "reprompt snapshot v1"

// Environment variables read by Run and CheckUnused.
const (
	// UpdateEnv, when set to anything but "", "0" or "false", makes Run
	// write the golden files instead of comparing with them.
	UpdateEnv = "REPROMPT_UPDATE"
	// CIEnv, when set likewise, marks a CI run: golden files are never
	// written, and a missing one fails the test.
	CIEnv = "CI"
)

// DefaultDir is the directory golden files are kept in, relative to the
// package directory (where go test runs).
const DefaultDir = "testdata"

// ext is the extension of golden files.
const ext = ".txtar"

// headerPrefix starts the header of every version of the format.
const headerPrefix = "reprompt snapshot v"

// Option configures Run and Format. Options are made by the functions of
// this package (Config, Dir, Redact, ExpectError); the interface is sealed.
type Option interface{ apply(*options) }

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

type redaction struct {
	re   *regexp.Regexp
	repl string
}

type options struct {
	cfg       runtime.Config
	dir       string
	redact    []redaction
	expectErr bool
}

func newOptions(opts []Option) *options {
	o := &options{dir: DefaultDir}
	for _, opt := range opts {
		if opt != nil {
			opt.apply(o)
		}
	}
	return o
}

// Config sets the configuration of the run. Without it Run uses the zero
// runtime.Config. Format ignores it.
func Config(cfg runtime.Config) Option {
	return optionFunc(func(o *options) { o.cfg = cfg })
}

// Dir sets the directory golden files are read from and written to. Without
// it Run uses DefaultDir ("testdata"). Format ignores it.
func Dir(dir string) Option {
	return optionFunc(func(o *options) { o.dir = dir })
}

// Redact replaces every match of re in the rendered snapshot with repl
// (which may use $1-style references, as in regexp.ReplaceAllString), so
// that volatile values (timestamps, random ids, temporary paths) do not make
// snapshots differ. Redactions apply in the order given, to the whole text
// after the header line. Redact panics if re is nil.
func Redact(re *regexp.Regexp, repl string) Option {
	if re == nil {
		panic("snapshots.Redact: nil regexp")
	}
	return optionFunc(func(o *options) { o.redact = append(o.redact, redaction{re, repl}) })
}

// ExpectError declares that the run must end with an error. The error's
// text is part of the snapshot either way; without ExpectError a run that
// fails also fails the test, and with it a run that succeeds fails the test.
func ExpectError() Option {
	return optionFunc(func(o *options) { o.expectErr = true })
}

// Run runs fn against model to completion, renders every step with Format,
// and compares the text with the golden file of the test:
// <dir>/<t.Name()>.txtar, subtests in subdirectories.
//
// A difference fails the test with a diff (-want +got) per section and the
// command that rewrites the file. With UpdateEnv set, the file is written
// instead (created if missing); with CIEnv set too, the test fails instead:
// golden files are never written on CI. A missing file fails the test
// unless UpdateEnv is set. See the package documentation.
//
// When model is a *Model, every request its script could not answer (see
// Model.Err) fails the test too, though the run may have gone on without
// the answer (compaction falls back on a summary made by rule; a failed
// sub-agent is an error result for its parent).
//
// The run uses t.Context(). Run returns the run's result, so that the test
// can assert more on it; it is nil only when the run could not start.
func Run(t testing.TB, fn prompt.Func, model runtime.Model, opts ...Option) *runtime.Result {
	t.Helper()
	o := newOptions(opts)
	res, err := runtime.Run(t.Context(), model, fn, o.cfg)
	switch {
	case err != nil && !o.expectErr:
		t.Errorf("snapshots: the run failed: %v", err)
	case err == nil && o.expectErr:
		t.Errorf("snapshots: the run succeeded, but ExpectError was given")
	}
	if sm, ok := model.(*Model); ok {
		// Script errors the run did not end with (a summary compaction
		// replaced by one made by rule, a sub-agent's failure given to its
		// parent as an error result) fail the test too.
		for _, e := range sm.scriptErrors() {
			if !errors.Is(err, e) {
				t.Errorf("snapshots: %v", e)
			}
		}
	}
	var steps []*runtime.Step
	if res != nil {
		steps = res.Steps
	}
	compareGolden(t, o.dir, goldenPath(o.dir, t.Name()), format(steps, err, o))
	return res
}

// Format renders steps, and the error the run ended with (nil if none), as
// the text of a golden file. The Redact options given apply; the others are
// ignored. The text is deterministic: it holds no wall-clock time, map keys
// are sorted, and effects are named by id and file without line numbers.
// Nil steps are skipped.
func Format(steps []*runtime.Step, runErr error, opts ...Option) []byte {
	return format(steps, runErr, newOptions(opts))
}

// goLine matches the line number of a Go source position.
var goLine = regexp.MustCompile(`(\.go):\d+`)

func format(steps []*runtime.Step, runErr error, o *options) []byte {
	f := &formatter{schemas: map[string]shown{}, red: func(s string) string {
		for _, r := range o.redact {
			s = r.re.ReplaceAllString(s, r.repl)
		}
		return s
	}}
	var prev *runtime.Step
	for _, s := range steps {
		if s == nil {
			continue
		}
		f.step(s, prev)
		prev = s
	}
	f.section("end")
	fmt.Fprintf(&f.b, "steps: %d\n", len(steps))
	if runErr != nil {
		// Sites in errors lose their line numbers, as effect sites do, so
		// that editing a file does not change every snapshot.
		f.field("", "error", goLine.ReplaceAllString(runErr.Error(), "$1"))
	}
	body := f.b.String()
	for _, r := range o.redact {
		body = r.re.ReplaceAllString(body, r.repl)
	}
	return []byte(Header + "\n" + body)
}

// redMessage returns m with the redactions applied to its text, so that
// messages that differ only in redacted values compare equal.
func (f *formatter) redMessage(m defs.Message) defs.Message {
	m.Content, m.Reasoning = f.red(m.Content), f.red(m.Reasoning)
	if len(m.ToolCalls) > 0 {
		calls := make([]defs.ToolCall, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			c.Arguments = []byte(f.red(string(c.Arguments)))
			calls[i] = c
		}
		m.ToolCalls = calls
	}
	return m
}

type shown struct {
	step   int
	schema string
}

type formatter struct {
	b       strings.Builder
	schemas map[string]shown    // last schema shown per tool name
	red     func(string) string // applies the redactions
	prefix  string              // of section names: "" or a sub-agent's "step N/agent NAME ID/"
}

func (f *formatter) section(name string) { fmt.Fprintf(&f.b, "-- %s --\n", name) }

// text writes lines as they are, escaping lines that would read as a section
// marker.
func (f *formatter) text(s string) {
	for line := range strings.Lines(strings.TrimSuffix(s, "\n") + "\n") {
		if isMarker(strings.TrimSuffix(line, "\n")) {
			f.b.WriteString(`\`)
		}
		f.b.WriteString(line)
	}
}

// field writes "indent label: value", or for a multi-line value
// "indent label: |" and the lines indented two more spaces.
func (f *formatter) field(indent, label, value string) {
	if !strings.Contains(value, "\n") {
		fmt.Fprintf(&f.b, "%s%s: %s\n", indent, label, value)
		return
	}
	fmt.Fprintf(&f.b, "%s%s: |\n", indent, label)
	for line := range strings.Lines(strings.TrimSuffix(value, "\n") + "\n") {
		if line != "\n" {
			f.b.WriteString(indent + "  ")
		}
		f.b.WriteString(line)
	}
}

func isMarker(line string) bool {
	return strings.HasPrefix(line, "-- ") && strings.HasSuffix(line, " --") && len(line) >= 6
}

func (f *formatter) step(s, prev *runtime.Step) {
	name := f.prefix + fmt.Sprintf("step %d", s.Number)
	if len(s.Effects) > 0 || s.Committed {
		f.section(name + "/effects")
		for _, e := range s.Effects {
			file, _, _ := strings.Cut(e.Site, ":")
			fmt.Fprintf(&f.b, "%s %s (%s): %s\n", e.ID, e.Phase, file, e.Reason)
		}
		if s.Committed {
			f.b.WriteString("transcript committed\n")
		}
	}
	refs := func(section string, rs []defs.Ref) {
		if len(rs) == 0 {
			return
		}
		f.section(name + "/" + section)
		for _, r := range rs {
			f.b.WriteString(r.String() + "\n")
		}
	}
	for i, sum := range s.Summaries {
		f.summary(fmt.Sprintf("%s/summary %d", name, i), sum)
	}
	refs("disabled", s.Disabled)
	refs("reminded", s.Reminded)
	if req := s.Request; req != nil {
		var prevReq *runtime.Request
		if prev != nil {
			prevReq = prev.Request
		}
		f.section(name + "/system")
		switch {
		case req.System == "":
			f.b.WriteString("(none)\n")
		case prevReq != nil && f.red(prevReq.System) == f.red(req.System):
			fmt.Fprintf(&f.b, "(as in step %d)\n", prev.Number)
		default:
			f.text(req.System)
		}
		f.section(name + "/tools")
		if len(req.Tools) == 0 {
			f.b.WriteString("(none)\n")
		}
		for _, t := range req.Tools {
			f.tool(s.Number, t)
		}
		f.section(name + "/messages")
		f.messages(req.Messages, prevReq, prev)
	}
	if r := s.Reply; r != nil {
		f.section(name + "/reply")
		if r.FinishReason != "" {
			fmt.Fprintf(&f.b, "finish: %s\n", r.FinishReason)
		}
		f.message("", r.Message)
	}
	for _, a := range s.Agents {
		f.agent(name, a)
	}
	if len(s.ToolResults) > 0 {
		f.section(name + "/results")
		for _, r := range s.ToolResults {
			fmt.Fprintf(&f.b, "%s %s %s", r.CallID, r.Name, oneLine(r.Arguments))
			if r.IsError {
				f.b.WriteString(" (error)")
			}
			f.b.WriteString("\n")
			f.field("  ", "content", r.Content)
		}
	}
	if s.State != nil {
		f.section(name + "/state")
		if len(s.State) == 0 {
			f.b.WriteString("(empty)\n")
		}
		for _, k := range slices.Sorted(maps.Keys(s.State)) {
			f.field("", k, jsonValue(s.State[k]))
		}
	}
}

// summary writes a summary request and its answer as one section.
func (f *formatter) summary(section string, sum *runtime.Summary) {
	f.section(section)
	if req := sum.Request; req != nil {
		if req.System != "" {
			f.field("", "system", req.System)
		}
		for _, m := range req.Messages {
			f.field("", string(m.Role), m.Content)
		}
	}
	if sum.Err != nil {
		f.field("", "error", goLine.ReplaceAllString(sum.Err.Error(), "$1"))
	}
	if r := sum.Reply; r != nil {
		f.field("", "summary", r.Message.Content)
	}
}

// agent writes the steps of a sub-agent that a tool call of the step
// named parent ran, as sections named "parent/agent NAME CALLID/step N/…",
// then an end section with its step count and error. References to earlier
// steps ("as in step N") stay within the sub-agent's steps.
func (f *formatter) agent(parent string, a *runtime.AgentRun) {
	sub := &formatter{schemas: map[string]shown{}, red: f.red, prefix: fmt.Sprintf("%s/agent %s %s/", parent, a.Name, a.CallID)}
	var prev *runtime.Step
	for _, s := range a.Steps {
		if s == nil {
			continue
		}
		sub.step(s, prev)
		prev = s
	}
	sub.section(sub.prefix + "end")
	fmt.Fprintf(&sub.b, "steps: %d\n", len(a.Steps))
	if a.Err != nil {
		sub.field("", "error", goLine.ReplaceAllString(a.Err.Error(), "$1"))
	}
	f.b.WriteString(sub.b.String())
}

func (f *formatter) tool(step int, t runtime.ToolSpec) {
	fmt.Fprintf(&f.b, "%s: %s\n", t.Name, oneLineText(t.Description))
	schema := f.red(indentJSON(t.Parameters))
	if last, ok := f.schemas[t.Name]; ok && last.schema == schema {
		fmt.Fprintf(&f.b, "  schema: (as in step %d)\n", last.step)
		return
	}
	f.schemas[t.Name] = shown{step, schema}
	f.field("  ", "schema", schema)
}

func (f *formatter) messages(msgs []defs.Message, prevReq *runtime.Request, prev *runtime.Step) {
	if len(msgs) == 0 {
		f.b.WriteString("(none)\n")
		return
	}
	same := 0
	if prevReq != nil {
		for same < len(msgs) && same < len(prevReq.Messages) && f.redMessage(msgs[same]).Identical(f.redMessage(prevReq.Messages[same])) {
			same++
		}
	}
	switch {
	case same == 1:
		fmt.Fprintf(&f.b, "[0] (as in step %d)\n", prev.Number)
	case same > 1:
		fmt.Fprintf(&f.b, "[0-%d] (as in step %d)\n", same-1, prev.Number)
	}
	for i := same; i < len(msgs); i++ {
		m := msgs[i]
		fmt.Fprintf(&f.b, "[%d] %s", i, m.Role)
		if m.ToolCallID != "" {
			f.b.WriteString(" " + m.ToolCallID)
		}
		if m.Name != "" {
			f.b.WriteString(" " + m.Name)
		}
		if m.IsError {
			f.b.WriteString(" (error)")
		}
		f.b.WriteString("\n")
		f.message("  ", m)
	}
}

// message writes the body of a message (not its role, id, name).
func (f *formatter) message(indent string, m defs.Message) {
	for _, k := range slices.Sorted(maps.Keys(m.Meta)) {
		f.field(indent, "meta", k+"="+m.Meta[k])
	}
	if m.Reasoning != "" {
		f.field(indent, "reasoning", m.Reasoning)
	}
	if m.Content != "" {
		f.field(indent, "content", m.Content)
	}
	for _, c := range m.ToolCalls {
		fmt.Fprintf(&f.b, "%scall: %s %s %s\n", indent, c.ID, c.Name, oneLine(c.Arguments))
	}
}

// oneLine returns raw JSON compacted to one line, or the raw text quoted
// when it is not valid JSON (or is empty).
func oneLine(raw []byte) string {
	var b bytes.Buffer
	if len(raw) == 0 || json.Compact(&b, raw) != nil {
		return fmt.Sprintf("%q", raw)
	}
	return b.String()
}

// oneLineText returns s with its line breaks written as \n.
func oneLineText(s string) string { return strings.ReplaceAll(s, "\n", `\n`) }

func indentJSON(raw []byte) string {
	var b bytes.Buffer
	if len(raw) == 0 || json.Indent(&b, raw, "", "  ") != nil {
		return fmt.Sprintf("%q", raw)
	}
	return b.String()
}

// jsonValue renders a state value as JSON (map keys sorted by
// encoding/json): on one line when short, indented otherwise.
func jsonValue(v any) string {
	out, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("(not JSON: %v)", err)
	}
	if len(out) <= 100 {
		return string(out)
	}
	return indentJSON(out)
}

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

// maxSectionDiffs bounds the sections whose diffs a mismatch prints.
const maxSectionDiffs = 6

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

type section struct{ name, body string }

// splitSections splits a golden text into its header ("" name) and its
// sections, in order.
func splitSections(text string) []section {
	out := []section{{}}
	start := 0 // offset of the current section's body
	pos := 0
	for line := range strings.Lines(text) {
		if l := strings.TrimSuffix(line, "\n"); isMarker(l) {
			out[len(out)-1].body = text[start:pos]
			out = append(out, section{name: strings.TrimSpace(l[3 : len(l)-3])})
			start = pos + len(line)
		}
		pos += len(line)
	}
	out[len(out)-1].body = text[start:]
	return out
}

// diffSections returns a go-cmp diff of each section that differs, in the
// order of got, then those only in want; at most maxSectionDiffs.
func diffSections(want, got string) string {
	ws, gs := splitSections(want), splitSections(got)
	wantBody := map[string]string{}
	for _, s := range ws {
		wantBody[s.name] = s.body
	}
	type pair struct {
		name     string
		w, g     string
		inW, inG bool
	}
	var pairs []pair
	seen := map[string]bool{}
	for _, s := range gs {
		w, ok := wantBody[s.name]
		pairs = append(pairs, pair{name: s.name, w: w, g: s.body, inW: ok, inG: true})
		seen[s.name] = true
	}
	for _, s := range ws {
		if !seen[s.name] {
			pairs = append(pairs, pair{name: s.name, w: s.body, inW: true})
		}
	}
	var b strings.Builder
	n := 0
	for _, p := range pairs {
		if p.inW && p.inG && p.w == p.g {
			continue
		}
		n++
		if n > maxSectionDiffs {
			continue
		}
		label := p.name
		if label == "" {
			label = "header"
		}
		switch {
		case !p.inW:
			fmt.Fprintf(&b, "-- %s -- (only in got)\n", label)
		case !p.inG:
			fmt.Fprintf(&b, "-- %s -- (only in want)\n", label)
		default:
			fmt.Fprintf(&b, "-- %s --\n", label)
		}
		b.WriteString(gocmp.Diff(lines(p.w), lines(p.g)))
	}
	if n > maxSectionDiffs {
		fmt.Fprintf(&b, "… and %d more sections differ\n", n-maxSectionDiffs)
	}
	if n == 0 { // differences the sections hide (e.g. a section repeated)
		b.WriteString(gocmp.Diff(lines(want), lines(got)))
	}
	return b.String()
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

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
