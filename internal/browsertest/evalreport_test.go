package browsertest

import (
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/reprompt/reprompt/evals"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// evalPage builds the command and writes the report of the result file
// that cmd/reprompt's TestEvalReport made from a real eval run (a scripted
// model with known mistakes: issue-4 fails its 4 runs), compared with a
// baseline in which issue-4 passed them all: a regression, exit status 1.
func evalPage(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "reprompt")
	command(t, 0, "go", "build", "-o", bin, "./cmd/reprompt")
	result := filepath.Join(root, "cmd", "reprompt", "testdata", "TestEvalReport.json")
	rep, err := evals.ReadReport(result)
	require.NoError(t, err, "the result file")
	c := rep.Case("issue-4")
	require.NotNil(t, c, "issue-4 in the result")
	c.Figures.Passed, c.Figures.PassAt1 = c.Figures.Runs, 1
	c.Runs = nil
	baseline := filepath.Join(dir, "baseline.json")
	require.NoError(t, rep.WriteFile(baseline))
	abs, err := filepath.Abs(result)
	require.NoError(t, err)
	page := filepath.Join(dir, "report.html")
	command(t, 1, bin, "eval", "report", abs, "--baseline", baseline, "-o", page)
	return page
}

// TestEvalReport opens the eval report and follows a failing run's chip:
// the run shows the check that failed, the step it failed at, and that
// step as its golden file shows it (issue 25's check).
func TestEvalReport(t *testing.T) {
	path := chromium(t)
	page := evalPage(t)
	ctx := browser(t, path)
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	eval := func(t *testing.T, js string) float64 { return get(t, ctx, js, chromedp.Evaluate[float64](js)) }
	text := func(t *testing.T, sel string) string { return get(t, ctx, "the text of "+sel, chromedp.Text(css(sel))) }

	do(t, ctx, "open the report", chromedp.Navigate("file://"+page), chromedp.WaitVisible(css(`#cases`)))
	assert.Equal(t, "triage", text(t, "#title"), "the title")
	assert.Equal(t, 4.0, eval(t, `document.querySelectorAll("#cases tr.case").length`), "cases in the table")
	assert.Equal(t, 16.0, eval(t, `document.querySelectorAll("#cases a.chip").length`), "run chips: 4 cases × 4 runs")
	assert.Equal(t, 7.0, eval(t, `document.querySelectorAll("#cases a.chip.fail").length`), "failing runs' chips")
	assert.Contains(t, text(t, "#comparison tr.worse"), "issue-4", "the comparison: the case worse")
	assert.Contains(t, text(t, "#comparison .verdict"), "Regressed: 1 case worse", "the comparison's verdict")

	// The chip of issue-4's run 2, which read another issue first: a
	// tool error at step 0.
	do(t, ctx, "click the chip of issue-4's run 2", chromedp.Click(css(`#cases a.chip[href="#c4-r2"]`)), chromedp.WaitVisible(css(`#c4-r2 .failure pre.golden`)))
	assert.Equal(t, "#c4-r2", get(t, ctx, "the location's hash", chromedp.Evaluate[string](`location.hash`)), "the run the chip links to")
	assert.Equal(t, 1.0, eval(t, `(function () {
		var r = document.getElementById("c4-r2").getBoundingClientRect();
		return r.top >= 0 && r.top < innerHeight ? 1 : 0;
	})()`), "the run, scrolled into view")
	assert.Equal(t, "no tool error", text(t, "#c4-r2 .failure .check"), "the failing check")
	assert.Equal(t, "at step 0", text(t, "#c4-r2 .failure .step"), "the step it failed at")
	golden := text(t, "#c4-r2 .failure pre.golden")
	assert.Contains(t, golden, "-- step 0/results --\ncall_1 read_issue {\"number\":1004} (error)", "the step, as its golden file shows it")
	assert.Positive(t, eval(t, `document.querySelector("#c4-r2 .failure pre.golden").getBoundingClientRect().height`), "the golden text's height")

	// A wrong answer: the check "expected", at the step of the answer.
	do(t, ctx, "click the chip of issue-4's run 0", chromedp.Click(css(`#cases a.chip[href="#c4-r0"]`)), chromedp.WaitVisible(css(`#c4-r0 .failure pre.golden`)))
	assert.Equal(t, "expected", text(t, "#c4-r0 .failure .check"), "the failing check")
	assert.Equal(t, "at step 1", text(t, "#c4-r0 .failure .step"), "the step it failed at")
	assert.Contains(t, text(t, "#c4-r0 .failure pre.golden"), "-- step 1/answer --", "the step of the answer")
}

// TestEvalRunStepLinks runs an eval with reprompt eval run (testdata's
// evalpkg of cmd/reprompt, whose scripted runs make mistakes) and follows
// a failed run's link to its steps: the step viewer's page of the run,
// open at the step its check failed at.
func TestEvalRunStepLinks(t *testing.T) {
	path := chromium(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "reprompt")
	command(t, 0, "go", "build", "-o", bin, "./cmd/reprompt")
	t.Setenv("EVALPKG_MISTAKES", "1")
	out := filepath.Join(dir, "out")
	command(t, 0, bin, "eval", "run", "./cmd/reprompt/testdata/evalpkg", "-o", out)
	ctx := browser(t, path)
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	text := func(t *testing.T, sel string) string { return get(t, ctx, "the text of "+sel, chromedp.Text(css(sel))) }

	do(t, ctx, "open the report", chromedp.Navigate("file://"+filepath.Join(out, "triage.html")), chromedp.WaitVisible(css(`#cases`)))
	assert.Equal(t, "expected", text(t, "#c4-r0 .failure .check"), "issue-4's run 0: the failing check")
	assert.Equal(t, "at step 1", text(t, "#c4-r0 .failure .step"), "the step it failed at")
	do(t, ctx, "follow the link to the steps of issue-4's run 0",
		chromedp.Click(css(`#c4-r0 a.steps`)), chromedp.WaitVisible(css(`#step-title`)))
	assert.Equal(t, "triage · issue-4 · run 0 · reprompt", get(t, ctx, "the page's title", chromedp.Title()), "the page of the run's steps")
	assert.Equal(t, "#step-1", get(t, ctx, "the location's hash", chromedp.Evaluate[string](`location.hash`)), "the step the link names")
	assert.Contains(t, text(t, "#step-title"), "Step 1", "the step shown: the one the check failed at")
}
