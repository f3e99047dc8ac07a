package reprompt_test

import (
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

const module = "github.com/reprompt/reprompt"

// allowed lists, for each package of the module, the module packages and
// outside modules its non-test files may import. The standard library is
// always allowed. A package missing here may import anything but the
// packages that restrict who imports them (see onlyImportedBy).
var allowed = map[string][]string{
	"state":              {},
	"defs":               {},
	"llm":                {"defs"},
	"internal/callsite":  {},
	"internal/pgtest":    {},
	"internal/msghash":   {"defs"},
	"internal/canon":     {},
	"internal/stepmods":  {"defs"},
	"internal/scenario":  {"prompt", "effects"},
	"internal/cachetest": {"defs", "effects", "prompt"},
	// The conversation every store runs (and the crash test kills): it
	// drives the runtime, so it lives outside session/sessiontest.
	"internal/convtest":  {"defs", "llm", "effects", "prompt", "runtime", "session", "github.com/google/go-cmp", "github.com/stretchr/testify"},
	"internal/modelcaps": {},
	"internal/httpwait":  {"llm"},
	"internal/redact":    {"llm"},
	"internal/lanes":     {"defs"},
	// The state of a prompt, behind package prompt (its handle) and the
	// runtime (which executes it).
	"internal/core": {"state", "defs", "effects", "internal/callsite", "github.com/google/jsonschema-go"},
	"effects":       {"state", "defs", "internal/callsite", "internal/canon", "internal/stepmods"},
	"prompt":        {"state", "defs", "effects", "internal/callsite", "internal/core", "github.com/google/jsonschema-go"},
	"session":       {"state", "defs", "effects", "internal/steprec", "session/internal/msgcodec", "session/internal/lineage"},
	// What session is built from: the stored form of a message, and the
	// resolution of a lineage's rows for LoadSteps.
	"session/internal/msgcodec": {"defs"},
	"session/internal/lineage":  {},
	// The stores reach the stored form through session's API only.
	"session/sqlite":   {"defs", "session", "modernc.org/sqlite"},
	"session/postgres": {"defs", "session", "github.com/jackc/pgx/v5"},
	// The step record and its golden text: one codec, below session.
	"internal/steprec": {"defs", "effects"},
	// The conformance kit users run from their own tests reports with
	// testify, like the module's tests: testify is already a requirement
	// of the module (go.mod), so importing the kit adds no module.
	"session/sessiontest": {"state", "defs", "effects", "session", "github.com/stretchr/testify"},
	"tokens":              {"defs", "internal/msghash", "github.com/tiktoken-go/tokenizer"},
	"effects/builtin": {"state", "defs", "effects", "prompt", "internal/modelcaps", "github.com/expr-lang/expr", "go.yaml.in/yaml/v3",
		"effects/builtin/internal/compaction", "effects/builtin/internal/transcript", "effects/builtin/internal/trimming",
		"effects/builtin/internal/when"},
	// What effects/builtin is built from: the compaction and trimming
	// engines, the transcript helpers they share, the when conditions.
	"effects/builtin/internal/compaction": {"state", "defs", "effects", "effects/builtin/internal/transcript"},
	"effects/builtin/internal/trimming":   {"defs", "effects", "effects/builtin/internal/transcript"},
	"effects/builtin/internal/transcript": {"defs"},
	"effects/builtin/internal/when":       {"github.com/expr-lang/expr"},
	// What providers/openai says and hears on the wire, through go-openai.
	"providers/openai/internal/wire": {"llm", "defs", "internal/lanes", "github.com/sashabaranov/go-openai"},
	"cmd/reprompt/internal/viewer":   {"defs", "session", "internal/steprec"},
	// The text of reprompt show: the viewer's model, written for a terminal.
	"cmd/reprompt/internal/showtext": {"cmd/reprompt/internal/viewer"},
	// The HTML report of an eval's result file: evals' Report only.
	"cmd/reprompt/internal/evalreport": {"evals"},
	// reprompt eval report reads result files with evals (ReadReport,
	// Compare), which links the runtime into the command.
	"cmd/reprompt": {"cmd/reprompt/internal/viewer", "cmd/reprompt/internal/showtext", "cmd/reprompt/internal/evalreport", "evals", "defs", "session", "session/sqlite", "session/postgres"},
	"runtime": {"state", "defs", "llm", "effects", "prompt", "session", "internal/callsite", "internal/steprec", "internal/msghash", "internal/core", "internal/canon", "internal/stepmods", "go.yaml.in/yaml/v3",
		// The OpenTelemetry API only (tracing is optional; see Config.TracerProvider).
		"go.opentelemetry.io/otel/trace", "go.opentelemetry.io/otel/attribute", "go.opentelemetry.io/otel/codes"},
	// Evals run prompts (runtime), check the runs (evals/check) and replay
	// recordings (snapshots); datasets may be YAML.
	"evals":                  {"llm", "prompt", "runtime", "snapshots", "evals/check", "evals/internal/hotpath", "go.yaml.in/yaml/v3"},
	"evals/internal/hotpath": {},
	// The checks of a run: a judge is a prompt (prompt, runtime); failing
	// steps are shown as golden files show them (snapshots). Never evals.
	"evals/check": {"defs", "llm", "prompt", "runtime", "snapshots"},
	// The nested module that runs prompt functions as Temporal workflows.
	"temporal": {"defs", "llm", "prompt", "runtime", "session", "go.temporal.io/sdk"},
}

// providerImports are the module packages a model adapter (a package under
// providers/) may import: the model contract (llm, defs), the table of
// model capabilities and the adapters' own internal packages, never the
// runtime that drives a model. Outside modules (the provider's SDK) are
// restricted by onlyImportedBy.
var providerImports = []string{"llm", "defs", "internal/modelcaps", "providers/openai/internal/wire", "internal/httpwait", "internal/redact", "internal/lanes"}

// onlyImportedBy restricts who may import a package (non-test files), by
// path prefix.
var onlyImportedBy = map[string][]string{
	"github.com/sashabaranov/go-openai": {"providers/openai"},
	"modernc.org/sqlite":                {"session/sqlite"},
	"github.com/jackc/pgx/v5":           {"session/postgres"},
	module + "/snapshots":               {"examples/", "evals"},
	// What a prompt is made of: its two faces only (prompt, runtime).
	module + "/internal/core": {"prompt", "runtime"},
	// What effects change in a step: effects records it, the runtime
	// applies it.
	module + "/internal/stepmods": {"effects", "runtime"},
	// Benchmark prompts and the conversation of the stores' tests: tests
	// only.
	module + "/internal/scenario": {},
	// mock-llm for tests: tests only.
	module + "/internal/mockllm":  {},
	module + "/internal/convtest": {},
	// The adapter: examples only (and the adapter itself, for its
	// internal/wire, which only it imports).
	module + "/providers/openai":               {"examples/", "temporal/examples/", "providers/openai"},
	module + "/providers/openai/internal/wire": {"providers/openai"},
	// The Temporal SDK: the nested temporal module only.
	"go.temporal.io": {"temporal"},
	// Anthropic's SDK: the nested providers/anthropic module only.
	"github.com/anthropics/anthropic-sdk-go": {"providers/anthropic"},
	// The step record: the runtime fills it, session stores it, snapshots
	// and the viewer write and read its golden text.
	module + "/internal/steprec": {"runtime", "session", "snapshots", "cmd/reprompt/internal/viewer"},
	// The text writer of reprompt show: the command only, never the
	// viewer whose model it writes.
	module + "/cmd/reprompt/internal/showtext": {"cmd/reprompt"},
	// The eval report's page: the command only.
	module + "/cmd/reprompt/internal/evalreport": {"cmd/reprompt"},
	// The parts of session: behind its API (EncodeMessage, LoadSteps),
	// never used by its stores.
	module + "/session/internal/msgcodec": {"session"},
	module + "/session/internal/lineage":  {"session"},
	// The parts of effects/builtin: behind its API, never used directly.
	module + "/effects/builtin/internal/compaction": {"effects/builtin"},
	module + "/effects/builtin/internal/transcript": {"effects/builtin"},
	module + "/effects/builtin/internal/trimming":   {"effects/builtin"},
	module + "/effects/builtin/internal/when":       {"effects/builtin"},
	// The adapters' cache lanes: the provider adapters only.
	module + "/internal/lanes": {"providers/"},
	// The OpenTelemetry SDK and exporters: in tests and examples only; the
	// library uses the API, and users bring their SDK.
	"go.opentelemetry.io/otel/sdk":       {"examples/"},
	"go.opentelemetry.io/otel/exporters": {"examples/"},
}

func TestImportRules(t *testing.T) {
	fset := token.NewFileSet()
	imports := map[string]map[string]bool{} // package dir → import paths
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		if imports[dir] == nil {
			imports[dir] = map[string]bool{}
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			imports[dir][p] = true
		}
		return nil
	})
	require.NoError(t, err)
	for pkg := range allowed {
		assert.NotNil(t, imports[pkg], "package %s has rules but no Go files: update the rules", pkg)
	}
	for dir, imps := range imports {
		for imp := range imps {
			isStd := !strings.Contains(strings.Split(imp, "/")[0], ".")
			if strings.HasPrefix(dir, "providers/") && strings.HasPrefix(imp, module+"/") {
				assert.Contains(t, providerImports, strings.TrimPrefix(imp, module+"/"), "%s imports %s: a provider imports only %v of the module, never runtime", dir, imp, providerImports)
			}
			if rules, ok := allowed[dir]; ok && !isStd {
				rel := strings.TrimPrefix(imp, module+"/")
				assert.True(t, slices.Contains(rules, rel) || slices.ContainsFunc(rules, func(r string) bool {
					return strings.Contains(r, ".") && (imp == r || strings.HasPrefix(imp, r+"/"))
				}), "%s imports %s, which it may not (allowed: standard library and %v)", dir, imp, rules)
			}
			for restricted, importers := range onlyImportedBy {
				if imp != restricted && !strings.HasPrefix(imp, restricted+"/") {
					continue
				}
				assert.True(t, slices.ContainsFunc(importers, func(p string) bool { return dir == p || strings.HasPrefix(dir, p) }), "%s imports %s, which only %v may import", dir, imp, importers)
			}
		}
	}
}
