package browsertest

import (
	"bufio"
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session/sqlite"
	"github.com/reprompt/reprompt/snapshots"
)

type noteArgs struct {
	Note string `json:"note"`
}

// waitFor evaluates the JavaScript expression cond in the tab of ctx until
// it is true; actionTimeout without it fails the test.
func waitFor(t *testing.T, ctx context.Context, what, cond string) {
	t.Helper()
	deadline := time.Now().Add(actionTimeout)
	for {
		ok := get(t, ctx, what, chromedp.Evaluate[bool](cond))
		if ok {
			return
		}
		require.True(t, time.Now().Before(deadline), "%s: still not %s after %v", what, cond, actionTimeout)
		time.Sleep(100 * time.Millisecond)
	}
}

// TestViewerFollows: "reprompt view --serve" on a conversation that goes
// on while the page is open: each new turn, its steps and the message
// sent while it ran appear in the page without a reload.
func TestViewerFollows(t *testing.T) {
	path := chromium(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "reprompt")
	command(t, 0, "go", "build", "-o", bin, "./cmd/reprompt")

	db := filepath.Join(dir, "chat.db")
	st, err := sqlite.Open(db)
	require.NoError(t, err)
	defer st.Close()
	var r *runtime.Runner
	steer := "And eggs, please."
	fn := func(p *prompt.Prompt) error {
		p.DefSystem("role", "You keep notes.")
		prompt.DefTool(p, "remember", "Remember a note.", func(ctx context.Context, a noteArgs) (string, error) {
			if steer != "" {
				r.Send(steer) // while the step runs: it joins at the next step
				steer = ""
			}
			return "noted", nil
		})
		return nil
	}
	model := snapshots.Script(
		snapshots.Text("Hello! What should I remember?"),
		snapshots.CallTool("remember", noteArgs{Note: "buy milk"}),
		snapshots.Text("Noted: milk and eggs."),
		snapshots.Text("Milk and eggs."),
	)
	r = runtime.New(model, fn, runtime.Config{Store: st, SessionID: "chat"})
	_, err = r.Continue(t.Context(), "Hi.")
	require.NoError(t, err)

	serve := exec.Command(bin, "--store", "sqlite:"+db, "view", "--serve", "chat")
	out, err := serve.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, serve.Start())
	t.Cleanup(func() { _ = serve.Process.Kill(); _ = serve.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "the first line of view --serve")
	url := regexp.MustCompile(`http://\S+/`).FindString(line)
	require.NotEmpty(t, url, "view --serve says %q", line)

	ctx := browser(t, path)
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	count := func(sel string) int {
		return get(t, ctx, "count "+sel, chromedp.Evaluate[int](`document.querySelectorAll(`+strconv.Quote(sel)+`).length`))
	}
	// The text of sel in one evaluation: the page redraws its timeline
	// when it catches up, which detaches the nodes chromedp.Text holds.
	text := func(sel string) string {
		return get(t, ctx, "the text of "+sel, chromedp.Evaluate[string](`(document.querySelector(`+strconv.Quote(sel)+`) || {}).textContent || ""`))
	}

	do(t, ctx, "open the served page", chromedp.Navigate(url), chromedp.WaitVisible(css(`#timeline li.turn`)))
	assert.Equal(t, 1, count(`#timeline li.turn`), "turns before the conversation goes on")
	assert.Contains(t, text(`#timeline li.turn`), "Hi.")
	// A mark that a reload would erase.
	do(t, ctx, "mark the page", chromedp.Evaluate[chromedp.Void](`window.notReloaded = true`))

	turns := []struct {
		msg   string
		steps int
	}{{"Remember to buy milk.", 3}, {"What do I remember?", 4}}
	for i, turn := range turns {
		_, err := r.Continue(t.Context(), turn.msg)
		require.NoError(t, err, "Continue(%q)", turn.msg)
		waitFor(t, ctx, "turn "+strconv.Itoa(i+1)+" in the page",
			`document.querySelectorAll("#timeline li.turn").length === `+strconv.Itoa(i+2)+
				` && document.querySelectorAll("#timeline li.step").length === `+strconv.Itoa(turn.steps))
		last := get(t, ctx, "the last turn's entry", chromedp.Evaluate[string](`Array.from(document.querySelectorAll("#timeline li.turn")).pop().textContent`))
		assert.Contains(t, last, turn.msg, "the new turn's entry")
		assert.Equal(t, "Step "+strconv.Itoa(turn.steps-1), text(`#step-title`), "the page follows the last step")
		assert.Contains(t, text(`#meta`), strconv.Itoa(i+2)+" turns · "+strconv.Itoa(turn.steps)+" steps")
	}
	assert.True(t, get(t, ctx, "the mark", chromedp.Evaluate[bool](`window.notReloaded === true`)), "the page was reloaded")

	do(t, ctx, "the step the steering message joined",
		chromedp.Click(css(`#timeline li.step[data-n="2"]`)),
		chromedp.WaitVisible(css(`#detail .msg.sent`)),
	)
	assert.Contains(t, text(`#detail .msg.sent`), "And eggs, please.")
	assert.Contains(t, text(`#timeline li.step[data-n="2"]`), "+1 sent")
	assert.Contains(t, text(`#detail .msg.user-turn`), "Remember to buy milk.", "the turn's message above its step")
}
