package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/evals"
	"github.com/reprompt/reprompt/evals/check"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/snapshots"
)

// issue and triage are the input and the typed answer of the triage
// prompt the eval measures.
type issue struct {
	Number int    `json:"number"`
	Text   string `json:"text"`
}

type triage struct {
	Priority int    `json:"priority" jsonschema:"1 (urgent) to 4"`
	Label    string `json:"label"`
}

type readArgs struct {
	Number int `json:"number"`
}

func triageAgent(in issue) prompt.Func {
	return func(p *prompt.Prompt) error {
		p.DefSystem("role", "You triage issues.")
		prompt.DefTool(p, "read_issue", "Read an issue by number.", func(ctx context.Context, a readArgs) (string, error) {
			if a.Number != in.Number {
				return "", fmt.Errorf("no issue %d", a.Number)
			}
			return in.Text, nil
		})
		prompt.DefOutput[triage](p, "triage", "Your triage.")
		p.User(fmt.Sprintf("Triage issue %d.", in.Number))
		return nil
	}
}

// mistake is what a scripted run gets wrong.
type mistake int

const (
	right         mistake = iota
	wrongPriority         // answers with another priority: fails "expected" at the answer's step
	noRead                // answers without reading the issue: fails "called read_issue"
	badRead               // reads another issue first: fails "no tool error" at step 0
)

func script(in issue, want triage, m mistake) llm.Model {
	read := snapshots.CallTool("read_issue", readArgs{Number: in.Number})
	switch m {
	case wrongPriority:
		w := want
		w.Priority = want.Priority%4 + 1
		return snapshots.Script(read, snapshots.Answer(w))
	case noRead:
		return snapshots.Script(snapshots.Answer(want))
	case badRead:
		return snapshots.Script(snapshots.CallTool("read_issue", readArgs{Number: in.Number + 1000}), read, snapshots.Answer(want))
	}
	return snapshots.Script(read, snapshots.Answer(want))
}

// knownMistakes are the scripted runs' mistakes, by case and run: issue-1
// passes 4 of 4 runs, issue-2 2 of 4, issue-3 3 of 4, issue-4 none.
var knownMistakes = map[string][]mistake{
	"issue-2": {right, wrongPriority, right, wrongPriority},
	"issue-3": {noRead},
	"issue-4": {wrongPriority, noRead, badRead, wrongPriority},
}

// evalResult runs the triage eval on scripted models making mistakes,
// 4 runs a case, writes its result file into dir as name, and returns
// its path. What changes from run to run (the start, the durations) is
// set to fixed values, so that what is made of the file can be golden.
func evalResult(t *testing.T, dir, name string, mistakes map[string][]mistake) string {
	t.Helper()
	cases := make([]evals.Case[issue, triage], 4)
	for i := range cases {
		cases[i] = evals.Case[issue, triage]{
			Name:     fmt.Sprintf("issue-%d", i+1),
			Input:    issue{Number: i + 1, Text: fmt.Sprintf("Issue %d: the program crashes.", i+1)},
			Expected: &triage{Priority: i%4 + 1, Label: "bug"},
		}
	}
	e := &evals.Eval[issue, triage]{
		Name:   "triage",
		Cases:  cases,
		Prompt: triageAgent,
		Models: func(name string, run int) (llm.Model, error) {
			var c evals.Case[issue, triage]
			for _, c = range cases {
				if c.Name == name {
					break
				}
			}
			m := right
			if ms := mistakes[name]; run < len(ms) {
				m = ms[run]
			}
			return script(c.Input, *c.Expected, m), nil
		},
		Checks: []check.Check{check.Called("read_issue", nil), check.NoToolError()},
		K:      4,
		PassK:  2,
		// The failing steps' text in the file, as "reprompt eval run"
		// (Eval.Test) writes it.
		Goldens: true,
	}
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	require.NoError(t, err)
	_, err = e.Run(t.Context(), f)
	require.NoError(t, err, "the eval")
	require.NoError(t, f.Close())

	rep, err := evals.ReadReport(path)
	require.NoError(t, err, "the result file")
	rep.Started = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	rep.ElapsedMS = 1234
	rep.Overall.LatencyMS = evals.Stat{Mean: 10, P95: 20}
	for i := range rep.Cases {
		rep.Cases[i].Figures.LatencyMS = evals.Stat{Mean: 10, P95: 20}
		for j := range rep.Cases[i].Runs {
			rep.Cases[i].Runs[j].LatencyMS = 10
		}
	}
	require.NoError(t, rep.WriteFile(path))
	return path
}

// golden compares got with testdata/<test name><ext>, the temporary
// directory dir written as TMP.
func golden(t *testing.T, ext, dir, got string) {
	t.Helper()
	got = strings.ReplaceAll(got, dir, "TMP")
	snapshots.Golden(t, filepath.Join("testdata", strings.ReplaceAll(t.Name(), "/", "_")+ext), []byte(got))
}

// TestEvalReport: eval report writes the table of a result file and its
// HTML page; a case's failing runs show each check that failed, at its
// step, with the step's golden text.
func TestEvalReport(t *testing.T) {
	dir := t.TempDir()
	result := evalResult(t, dir, "triage.json", knownMistakes)
	code, out, errs := cli(t, "eval", "report", result)
	require.Equal(t, 0, code, errs)
	golden(t, ".txt", dir, out)
	assert.Contains(t, out, "wrote "+filepath.Join(dir, "triage.html"), "the page, next to the result by default")
	page, err := os.ReadFile(filepath.Join(dir, "triage.html"))
	require.NoError(t, err)
	golden(t, ".html", dir, string(page))

	// The result file itself: the input of the browser test
	// (internal/browsertest), made by a real run.
	data, err := os.ReadFile(result)
	require.NoError(t, err)
	golden(t, ".json", dir, string(data))

	html := string(page)
	for _, want := range []string{
		`<a class="chip fail" href="#c4-r0" title="run 0 failed: expected">0</a>`,
		`<div class="run fail" id="c4-r2">`,
		`<span class="check">no tool error</span> <span class="step">at step 0</span>`,
		"call_1 read_issue {&#34;number&#34;:1004} (error)",
		`<span class="check">expected</span> <span class="step">at step 1</span>`,
	} {
		assert.Contains(t, html, want, "the page")
	}
	assert.NotContains(t, html, "<script", "a page without a script")
	assert.NotRegexp(t, `(?i)(src|href)="(https?:)?//`, html, "a page that loads nothing")
}

// TestEvalReportBaseline: compared with a baseline, a case that passed
// every run and now passes none is worse (Fisher p ≈ 0.029 at 4 runs a
// side), and the command exits with status 1; a case at 2 of 4 or 3 of 4
// is unsure; the other way round, the case is better, and the status 0.
func TestEvalReportBaseline(t *testing.T) {
	dir := t.TempDir()
	good := evalResult(t, dir, "good.json", nil)
	bad := evalResult(t, dir, "bad.json", knownMistakes)

	t.Run("worse", func(t *testing.T) {
		out := filepath.Join(dir, "worse.html")
		code, stdout, errs := cli(t, "eval", "report", bad, "--baseline", good, "-o", out)
		assert.Equal(t, 1, code, "exit status of a regression:\n%s", errs)
		assert.Equal(t, "reprompt: 1 case worse than in the baseline "+good+": issue-4\n", errs, "the error")
		golden(t, ".txt", dir, stdout)
		assert.Contains(t, stdout, "worse issue-4: 4/4 → 0/4 (Fisher p=0.029, α=0.05)\n", "the comparison")
		assert.Contains(t, stdout, "unsure issue-2: 4/4 → 2/4 (Fisher p=0.429, α=0.05)\n", "the comparison")
		page, err := os.ReadFile(out)
		require.NoError(t, err, "the page, written though the result regressed")
		golden(t, ".html", dir, string(page))
		assert.Contains(t, string(page), `<tr class="worse"><td><span class="tag worse">worse</span></td><td class="name"><a href="#c4">issue-4</a></td><td class="num">4/4</td><td class="num">0/4</td><td class="num">0.029</td></tr>`, "the comparison's table")
		assert.Contains(t, string(page), `<section class="comparison regressed" id="comparison">`, "the comparison, marked regressed")
	})
	t.Run("better", func(t *testing.T) {
		code, stdout, errs := cli(t, "eval", "report", good, "--baseline", bad, "-o", filepath.Join(dir, "better.html"))
		assert.Equal(t, 0, code, "exit status without a regression:\n%s", errs)
		assert.Contains(t, stdout, "better issue-4: 0/4 → 4/4 (Fisher p=0.029, α=0.05)\n", "the comparison")
		assert.Contains(t, stdout, "compared with the baseline: 1 case better, 2 cases changed without significance", "the verdict")
	})
	t.Run("same", func(t *testing.T) {
		code, stdout, errs := cli(t, "eval", "report", bad, "--baseline", bad, "-o", filepath.Join(dir, "same.html"))
		assert.Equal(t, 0, code, errs)
		assert.Contains(t, stdout, "compared with the baseline: No case changed its pass rate.\n", "the verdict")
	})
}

// TestEvalReportEscapes: a result file's text is untrusted (the case names
// come from a dataset, the answers and reasons from a model): none of it
// reaches the page as markup, or the terminal as a control sequence.
func TestEvalReportEscapes(t *testing.T) {
	dir := t.TempDir()
	hostile := `<script>alert("name")</script><img src=x onerror=alert(1)>` + "\x1b[2J"
	rep := &evals.Report{Version: evals.ReportVersion, Eval: `</title><script>alert("eval")</script>`, K: 1, PassK: 1,
		Cases: []evals.CaseResult{{
			Name:    hostile,
			Figures: evals.Figures{Runs: 1},
			Runs: []evals.RunResult{{
				Output:   []byte(`"</pre><script>alert(\"output\")</script>"`),
				Error:    `<b onmouseover=alert(1)>error</b>`,
				Failures: []check.Failure{{Check: `"><script>alert("check")</script>`, Step: 0, Reason: "<i>why</i>", Golden: "-- step 0/reply --\n</pre><script>alert('golden')</script>\n"}},
			}},
		}}}
	result := filepath.Join(dir, "hostile.json")
	require.NoError(t, rep.WriteFile(result))
	base := *rep
	base.Cases = []evals.CaseResult{{Name: hostile, Figures: evals.Figures{Runs: 5, Passed: 5}}}
	baseline := filepath.Join(dir, "base.json")
	require.NoError(t, base.WriteFile(baseline))

	out := filepath.Join(dir, "hostile.html")
	code, stdout, errs := cli(t, "eval", "report", result, "--baseline", baseline, "-o", out)
	assert.Equal(t, 0, code, "exit status: 5/5 → 0/1 is not significant:\n%s", errs)
	assert.NotContains(t, stdout, "\x1b", "the table: no escape sequence")
	assert.Contains(t, stdout, `<script>alert("name")</script>`, "the table: the name, printable")
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	page := string(data)
	for _, bad := range []string{"<script", "<img", "<b ", "<i>", "</pre><script"} {
		assert.NotContains(t, page, bad, "the page: markup from the result file")
	}
	for _, want := range []string{
		`&lt;script&gt;alert(&#34;name&#34;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;`,
		`&lt;/title&gt;&lt;script&gt;alert(&#34;eval&#34;)&lt;/script&gt; · reprompt eval</title>`,
		`&lt;/pre&gt;&lt;script&gt;alert(&#39;golden&#39;)&lt;/script&gt;`,
		`&lt;i&gt;why&lt;/i&gt;`,
	} {
		assert.Contains(t, page, want, "the page: the text, escaped")
	}
}

// TestEvalReportErrors: the command line and the files it reads.
func TestEvalReportErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no file", []string{"eval", "report"}, 2, "eval takes report and one RESULT file"},
		{"not report", []string{"eval", "show", "x.json"}, 2, "eval takes report and one RESULT file, or run and one PKG"},
		{"run no package", []string{"eval", "run"}, 2, "eval takes report and one RESULT file, or run and one PKG"},
		{"run two packages", []string{"eval", "run", "./a", "./b"}, 2, "eval takes report and one RESULT file, or run and one PKG"},
		{"run a result", []string{"eval", "run", writeFile(t, dir, "x.json", "{}")}, 2, "eval run takes a Go package, " + filepath.Join(dir, "x.json") + " is a file (eval report renders a result file)"},
		{"run k", []string{"eval", "run", "./a", "--k", "-1"}, 2, "eval run: --k takes a number of runs (≥ 1)"},
		{"run no dataset", []string{"eval", "run", "./a", "--dataset", filepath.Join(dir, "none.yaml")}, 1, "dataset: stat " + filepath.Join(dir, "none.yaml") + ": no such file"},
		{"run bad baseline", []string{"eval", "run", "./a", "--baseline", filepath.Join(dir, "none.json")}, 1, "baseline: open " + filepath.Join(dir, "none.json") + ": no such file"},
		{"missing", []string{"eval", "report", filepath.Join(dir, "missing.json")}, 1, "no such file"},
		{"not a result", []string{"eval", "report", writeFile(t, dir, "bad.json", `{"version":7}`)}, 1, "version 7, this program reads version 1"},
		{"bad baseline", []string{"eval", "report", writeFile(t, dir, "ok.json", `{"version":1,"k":1,"pass_k":1,"cases":[]}`), "--baseline", writeFile(t, dir, "cut.json", `{"version":1,"cases":[`)}, 1, "baseline: read report"},
		{"inconsistent", []string{"eval", "report", writeFile(t, dir, "runs.json", `{"version":1,"k":1,"pass_k":1,"cases":[{"name":"a","runs":[{"run":3}]}]}`)}, 1, `runs.json: case "a": run 3, not from 0 to k-1 (0)`},
		{"k too large", []string{"eval", "report", writeFile(t, dir, "k.json", `{"version":1,"k":300000000,"pass_k":1,"cases":[{"name":"a"}]}`)}, 1, "k 300000000: more runs a case than the page shows (10000)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := cli(t, tc.args...)
			assert.Equal(t, tc.code, code, "exit status: %s", errs)
			assert.Contains(t, errs, tc.want, "the error")
		})
	}
}

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}
