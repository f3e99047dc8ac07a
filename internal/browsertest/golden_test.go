package browsertest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// narrowCall is a golden step file of one step whose tool call has short
// arguments and a long result: in a narrow window, an automatic table
// layout gave the arguments' column the width of about one character.
var narrowCall = `reprompt snapshot v1
-- step 0/messages --
[0] user
  content: Read the report.
-- step 0/reply --
finish: tool_calls
call: call_1 read_file {"path":"q3.txt"}
-- step 0/results --
call_1 read_file {"path":"q3.txt"}
  content: ` + strings.Repeat("The third quarter's figures are in line with the forecast. ", 40) + strings.Repeat("0123456789abcdef", 20) + `
-- step 0/state --
(empty)
-- end --
steps: 1
`

// goldenPages builds the command and writes the pages of golden files:
// the repository's TestConversationGolden (4 steps), the same cut short in
// its step 2, and narrowCall. It returns the pages by name.
func goldenPages(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "reprompt")
	command(t, 0, "go", "build", "-o", bin, "./cmd/reprompt")
	data, err := os.ReadFile(filepath.Join(root, "snapshots", "testdata", "TestConversationGolden.txtar"))
	require.NoError(t, err)
	text := string(data)
	step2 := strings.Index(text, "-- step 2/")
	require.Positive(t, step2, "TestConversationGolden.txtar has no step 2")
	files := map[string]string{
		"conversation": text,
		"cut":          text[:step2+strings.Index(text[step2:], "content: ")+12],
		"narrow":       narrowCall,
	}
	pages := map[string]string{}
	for name, text := range files {
		in, out := filepath.Join(dir, name+".txtar"), filepath.Join(dir, name+".html")
		require.NoError(t, os.WriteFile(in, []byte(text), 0o644))
		status := 0
		if name == "cut" {
			status = 1 // the page of the steps read, and an error
		}
		command(t, status, bin, "view", in, "-o", out)
		pages[name] = out
	}
	return pages
}

func TestViewerGoldenFiles(t *testing.T) {
	path := chromium(t)
	pages := goldenPages(t)
	ctx := browser(t, path)
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	eval := func(t *testing.T, js string) float64 {
		return get(t, ctx, js, chromedp.Evaluate[float64](js))
	}
	open := func(t *testing.T, name string) {
		do(t, ctx, "open the page of "+name, chromedp.Navigate("file://"+pages[name]), chromedp.WaitVisible(css(`#step-title`)))
	}

	t.Run("no empty chart", func(t *testing.T) {
		open(t, "conversation")
		assert.Equal(t, 4.0, eval(t, `document.querySelectorAll("#timeline li.step").length`), "steps in the timeline")
		assert.Equal(t, 0.0, eval(t, `document.getElementById("chart-wrap").getBoundingClientRect().height`),
			"the height of the token chart of a golden file, which has no token figures")
	})

	t.Run("cut short", func(t *testing.T) {
		open(t, "cut")
		assert.Equal(t, 3.0, eval(t, `document.querySelectorAll("#timeline li.step").length`), "steps read before the cut, in the timeline")
		assert.Equal(t, 1.0, eval(t, `document.querySelectorAll("#timeline li.step .tag.damage").length`), "steps marked damaged")
		assert.Equal(t, 1.0, eval(t, `document.querySelectorAll('#timeline li.step[data-n="2"] .tag.damage').length`), "the last step read is marked damaged")
		notes := get(t, ctx, "the notes", chromedp.Text(css(`#notes`)))
		assert.Contains(t, notes, "the file is cut short", "the page's notes")
		do(t, ctx, "the last step read", chromedp.Click(css(`#timeline li.step[data-n="2"]`)), chromedp.WaitVisible(css(`#detail p.damage`)))
	})

	t.Run("narrow tool-call columns", func(t *testing.T) {
		for _, width := range []int64{1400, 800, 480} {
			do(t, ctx, "a window of the width", chromedp.EmulateViewport(width, 900))
			open(t, "narrow")
			do(t, ctx, "the tool call", chromedp.WaitVisible(css(`#detail table.calls tr.call`)))
			// The width of a character of a value, and of the columns
			// of the arguments and of the result.
			char := eval(t, `(function () {
				var pre = document.querySelector("#detail table.calls tr.call td:nth-child(2) pre"), c = document.createElement("canvas").getContext("2d");
				c.font = getComputedStyle(pre).font;
				return c.measureText("0123456789").width / 10;
			})()`)
			require.Positive(t, char, "the width of a character")
			args := eval(t, `document.querySelector("#detail table.calls tr.call td:nth-child(2)").getBoundingClientRect().width`)
			result := eval(t, `document.querySelector("#detail table.calls tr.call td:nth-child(3)").getBoundingClientRect().width`)
			lines := eval(t, `(function () {
				var pre = document.querySelector("#detail table.calls tr.call td:nth-child(2) pre");
				return Math.round(pre.getBoundingClientRect().height / parseFloat(getComputedStyle(pre).lineHeight));
			})()`)
			t.Logf("window %d px: a character %.1f px, the arguments' column %.0f px (%.1f characters, %.0f lines), the result's %.0f px", width, char, args, args/char, lines, result)
			assert.GreaterOrEqual(t, args/char, 10.0, "window %d px: the arguments' column, in characters", width)
			assert.GreaterOrEqual(t, result/char, 10.0, "window %d px: the result's column, in characters", width)
			assert.Equal(t, 1.0, lines, "window %d px: lines of the arguments {\"path\":\"q3.txt\"}", width)
			overflow := eval(t, `(function () {
				var d = document.getElementById("detail"), tb = d.querySelector("table.calls");
				return tb.getBoundingClientRect().right - (d.getBoundingClientRect().left + d.clientWidth);
			})()`)
			assert.LessOrEqual(t, overflow, 0.0, "window %d px: how far the calls' table reaches past the step's pane", width)
		}
		do(t, ctx, "the window as it was", chromedp.EmulateViewport(1400, 900))
	})
}
