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

// goldenPages builds the command and writes the pages of golden files:
// the repository's TestConversationGolden (4 steps), the same cut short in
// its step 2. It returns the pages by name.
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

}
