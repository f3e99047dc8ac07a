package browsertest

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// root is the parent module's directory.
const root = "../.."

func envOn(name string) bool {
	switch strings.ToLower(os.Getenv(name)) {
	case "", "0", "false", "no", "off":
		return false
	}
	return true
}

// chromium returns the browser to drive, skipping (or failing, with
// REPROMPT_BROWSER_REQUIRED) when there is none.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("REPROMPT_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	require.False(t, envOn("REPROMPT_BROWSER_REQUIRED"), "no Chromium found (REPROMPT_CHROMIUM, or chromium on the PATH), and REPROMPT_BROWSER_REQUIRED is set")
	t.Skip("no Chromium found (REPROMPT_CHROMIUM, or chromium on the PATH); set REPROMPT_BROWSER_REQUIRED=1 to fail instead")
	return ""
}

// command runs name with args in the parent module and returns its output;
// a status other than want fails the test.
func command(t *testing.T, want int, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err, "%s %v", name, args)
	}
	require.Equal(t, want, code, "%s %v: exit status %d, want %d:\n%s", name, args, code, want, out)
	return string(out)
}

// sessions builds the command and the examples, and writes the viewer's
// pages: the default strategy of examples/longsession (320 steps, and
// 1000), and examples/resumable crashed in step 3 (crashed), then resumed.
type pages struct{ long, long1000, resumable, crashed, agents string }

func makePages(t *testing.T) pages {
	t.Helper()
	dir := t.TempDir()
	for _, pkg := range []string{"cmd/reprompt", "examples/longsession", "examples/resumable"} {
		command(t, 0, "go", "build", "-o", filepath.Join(dir, filepath.Base(pkg)), "./"+pkg)
	}
	bin := func(name string) string { return filepath.Join(dir, name) }
	long, long1000, res := filepath.Join(dir, "long.db"), filepath.Join(dir, "long1000.db"), filepath.Join(dir, "resumable.db")
	command(t, 0, bin("longsession"), "-only", "default", "-cached", "0.1", "-store", long)
	command(t, 0, bin("longsession"), "-only", "default", "-cached", "0.1", "-steps", "1000", "-store", long1000)
	p := pages{filepath.Join(dir, "long.html"), filepath.Join(dir, "long1000.html"), filepath.Join(dir, "resumable.html"), filepath.Join(dir, "crashed.html"), filepath.Join(dir, "agents.html")}
	command(t, 3, bin("resumable"), "-db", res, "-session", "demo", "-crash-at", "3")
	command(t, 0, bin("reprompt"), "--store", "sqlite:"+res, "view", "demo", "-o", p.crashed)
	command(t, 0, bin("resumable"), "-db", res, "-session", "demo")
	command(t, 0, bin("reprompt"), "--store", "sqlite:"+long, "view", "default-0.1", "-o", p.long)
	command(t, 0, bin("reprompt"), "--store", "sqlite:"+long1000, "view", "default-0.1", "-o", p.long1000)
	command(t, 0, bin("reprompt"), "--store", "sqlite:"+res, "view", "demo", "-o", p.resumable)
	command(t, 0, bin("reprompt"), "view", "snapshots/testdata/TestSubAgentSteps.txtar", "-o", p.agents)
	return p
}

// browser starts a headless Chromium and returns a context for a tab of
// 1400×900.
func browser(t *testing.T, path string) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 900),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelB(); cancelA() })
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1400, 900)), "start Chromium (%s)", path)
	return ctx
}

// actionTimeout bounds each step of a test in the browser.
const actionTimeout = 30 * time.Second

// do runs actions in the tab of ctx; an error fails the test.
func do(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, actionTimeout)
	defer cancel()
	require.NoError(t, chromedp.Do(ctx, actions...), "%s", what)
}

// get runs one action that returns a value.
func get[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, actionTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	require.NoError(t, err, "%s", what)
	return v
}

func TestViewer(t *testing.T) {
	path := chromium(t)
	p := makePages(t)
	ctx := browser(t, path)
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	// count and text check with the t of the (sub)test that calls them.
	count := func(t *testing.T, sel string) int {
		return get(t, ctx, "count "+sel, chromedp.Evaluate[int](`document.querySelectorAll(`+strconv.Quote(sel)+`).length`))
	}
	text := func(t *testing.T, sel string) string { return get(t, ctx, "the text of "+sel, chromedp.Text(css(sel))) }

	t.Run("longsession", func(t *testing.T) {
		do(t, ctx, "open the page", chromedp.Navigate("file://"+p.long), chromedp.WaitVisible(css(`#timeline li.step`)))
		n := count(t, `#timeline li.step`)
		assert.Equal(t, 320, n, "the timeline has %d steps, want 320", n)
		assert.NotZero(t, count(t, `#chart line.marker.compaction`), "the chart marks no compaction")
		chart := get(t, ctx, "the chart's height", chromedp.Evaluate[float64](`document.getElementById("chart-wrap").getBoundingClientRect().height`))
		assert.Greater(t, chart, 100.0, "the height of the token chart of a session with token figures")
		do(t, ctx, "an effect's reason", chromedp.WaitVisible(css(`#detail table.effects td.reason`)))
		reason := text(t, `#detail table.effects td.reason`)
		assert.Equal(t, "first run", reason, "the first effect of step 0 ran for %q, want %q", reason, "first run")
		do(t, ctx, "click the first compaction in the timeline",
			chromedp.WaitVisible(css(`#timeline li.step .tag.compaction`)),
			chromedp.Click(css(`#timeline li.step:has(.tag.compaction)`)),
			chromedp.WaitVisible(css(`#detail p.compaction`)),
		)
		title := text(t, `#step-title`)
		assert.True(t, strings.HasPrefix(title, "Step ") && title != "Step 0", "after the click the detail shows %q", title)
		commit := text(t, `#detail p.compaction`)
		assert.True(t, strings.HasPrefix(commit, "compaction: the transcript was rewritten, "), "the compaction step says %q", commit)
		do(t, ctx, "the next step, by the button", chromedp.Click(chromedp.ID("next")))
		next := text(t, `#step-title`)
		assert.NotEqual(t, title, next, "the next button left the page on %q", title)
		do(t, ctx, "back to the compaction", chromedp.Click(chromedp.ID("prev")), chromedp.WaitVisible(css(`#detail p.compaction`)))
		shot := get(t, ctx, "screenshot", chromedp.CaptureScreenshot())
		checkNotBlank(t, shot)
		if envOn("REPROMPT_UPDATE") && !envOn("CI") {
			require.NoError(t, os.WriteFile(filepath.Join(root, "docs", "viewer.png"), shot, 0o644))
			t.Log("wrote docs/viewer.png")
		}
	})

	t.Run("resumable", func(t *testing.T) {
		do(t, ctx, "open the page", chromedp.Navigate("file://"+p.resumable), chromedp.WaitVisible(css(`#timeline li.step`)))
		n := count(t, `#timeline li.step`)
		assert.GreaterOrEqual(t, n, 4, "the timeline has %d steps, want the run's (at least 4)", n)
		do(t, ctx, "click step 2",
			chromedp.Click(css(`#timeline li.step[data-n="2"]`)),
			chromedp.WaitVisible(css(`#detail table.state tr.change`)),
		)
		title := text(t, `#step-title`)
		assert.Equal(t, "Step 2", title, "after the click the detail shows %q, want Step 2", title)
		change := text(t, `#detail table.state tr.change`)
		assert.True(t, strings.Contains(change, "counts") && strings.Contains(change, "→"), "the state change of step 2 reads %q, want the counts before → after", change)
		do(t, ctx, "step 3, interrupted by the crash and completed by the resume",
			chromedp.Click(css(`#timeline li.step[data-n="3"]`)),
			chromedp.WaitVisible(css(`#detail p.resumed`)),
		)
		tag := text(t, `#timeline li.step[data-n="3"] .tag.resumed`)
		assert.Equal(t, "crashed, resumed", tag, "step 3's tag in the step list")
		assert.Equal(t, 1, count(t, `#timeline .tag.resumed`), "steps tagged as crashed and resumed")
		assert.Zero(t, count(t, `#timeline .tag.interrupted`), "steps tagged as interrupted in a run that resumed")
		do(t, ctx, "the tool calls of step 0",
			chromedp.Click(css(`#timeline li.step[data-n="0"]`)),
			chromedp.WaitVisible(css(`#detail table.calls tr.call`)),
		)
		call := text(t, `#detail table.calls tr.call`)
		assert.Contains(t, call, "count_words", "the tool call of step 0 reads %q, want count_words", call)
	})

	t.Run("crashed", func(t *testing.T) {
		do(t, ctx, "open the page of the run that crashed in step 3", chromedp.Navigate("file://"+p.crashed), chromedp.WaitVisible(css(`#timeline li.step`)))
		n := count(t, `#timeline li.step`)
		require.Equal(t, 4, n, "the timeline has %d steps, want steps 0 to 3", n)
		tag := text(t, `#timeline li.step[data-n="3"] .tag.interrupted`)
		assert.Equal(t, "interrupted", tag, "step 3's tag in the step list")
		assert.Equal(t, 1, count(t, `#timeline .tag.interrupted`), "steps tagged as interrupted")
	})

	t.Run("sub-agent", func(t *testing.T) {
		do(t, ctx, "open a golden file's page", chromedp.Navigate("file://"+p.agents), chromedp.WaitVisible(css(`#step-title`)))
		summary := text(t, `#detail details.agent summary`)
		assert.True(t, strings.HasPrefix(summary, "sub-agent researcher (call call_1): 2 steps"), "the sub-agent reads %q", summary)
		do(t, ctx, "expand the sub-agent in place",
			chromedp.Click(css(`#detail details.agent summary`)),
			chromedp.WaitVisible(css(`#detail details.agent .substep table.calls tr.call`)),
		)
		n := count(t, `#detail details.agent .substep`)
		assert.Equal(t, 2, n, "the expanded sub-agent shows %d steps, want 2", n)
		call := text(t, `#detail details.agent .substep table.calls tr.call`)
		assert.Contains(t, call, "note", "the sub-agent's first call reads %q, want its note", call)
	})

	t.Run("1000 steps", func(t *testing.T) {
		start := time.Now()
		do(t, ctx, "open the page", chromedp.Navigate("file://"+p.long1000), chromedp.WaitVisible(css(`#timeline li.step`)))
		wall := time.Since(start)
		do(t, ctx, "the first step's detail", chromedp.WaitVisible(css(`#step-title`)))
		readyMS := get(t, ctx, "the page's timing", chromedp.Evaluate[float64](`window.repromptViewer.readyMs`))
		scriptMS := get(t, ctx, "the page's timing", chromedp.Evaluate[float64](`window.repromptViewer.scriptMs`))
		detailMS := get(t, ctx, "the page's timing", chromedp.Evaluate[float64](`window.repromptViewer.detailMs`))
		n := count(t, `#timeline li.step`)
		assert.Equal(t, 1000, n, "the timeline has %d steps, want 1000", n)
		fi, err := os.Stat(p.long1000)
		require.NoError(t, err)
		t.Logf("1000 steps (%.1f MB page): timeline rendered %.0f ms after navigation began (page's clock; the script started at %.0f ms, once the page was read; the first step's detail, after the messages were read, at %.0f ms); %v from Navigate to the timeline visible (test's clock, with the protocol's round trips)",
			float64(fi.Size())/1e6, readyMS, scriptMS, detailMS, wall.Round(time.Millisecond))
		assert.LessOrEqual(t, readyMS, 1000.0, "the 1000-step page was ready %.0f ms after navigation, want under 1000", readyMS)
	})
}

// checkNotBlank fails unless the screenshot's pixels vary: a page that did
// not render is one colour.
func checkNotBlank(t *testing.T, shot []byte) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(shot))
	require.NoError(t, err, "screenshot")
	b := img.Bounds()
	var n, sum, sum2 float64
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			l := luma(img, x, y)
			n++
			sum += l
			sum2 += l * l
		}
	}
	mean := sum / n
	variance := sum2/n - mean*mean
	t.Logf("screenshot %dx%d: luminance mean %.1f, variance %.1f", b.Dx(), b.Dy(), mean, variance)
	assert.True(t, b.Dx() >= 1000 && b.Dy() >= 600, "screenshot is %dx%d, want the 1400x900 window", b.Dx(), b.Dy())
	assert.GreaterOrEqual(t, variance, 200.0, "screenshot looks blank: luminance variance %.1f", variance)
}

func luma(img image.Image, x, y int) float64 {
	r, g, b, _ := img.At(x, y).RGBA()
	return (0.299*float64(r) + 0.587*float64(g) + 0.114*float64(b)) / 257
}
