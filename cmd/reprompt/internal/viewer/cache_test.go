package viewer_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/cmd/reprompt/internal/viewer"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/snapshots"
)

// TestHTMLCacheSplit: the chart's data gives each step the provider's
// split of its input, [input, cache read, cache write], when the provider
// reported its cache, and nothing when it did not; the step's record
// (which the detail shows) keeps the writes for an hour too.
func TestHTMLCacheSplit(t *testing.T) {
	fn := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "noop", "does nothing", func(context.Context, struct{}) (string, error) { return "ok", nil })
		p.User("go")
		return nil
	}
	model := snapshots.Script(
		snapshots.Reply{Calls: []snapshots.Call{{Name: "noop"}}, Usage: &llm.Usage{InputTokens: 1000, CacheWriteTokens: 900, CacheWrite1hTokens: 300}},
		snapshots.Reply{Calls: []snapshots.Call{{Name: "noop"}}, Usage: &llm.Usage{InputTokens: 1100, CachedTokens: 900, CacheWriteTokens: 150}},
		snapshots.Reply{Text: "done", Usage: &llm.Usage{InputTokens: 1200}},
	)
	st := session.NewMemory()
	_, err := runtime.Run(t.Context(), model, fn, runtime.Config{Store: st, SessionID: "cache"})
	require.NoError(t, err)
	run, err := viewer.FromStore(t.Context(), st, "cache")
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, viewer.HTML(&b, run))

	var sum struct {
		Steps []struct {
			Cache []int `json:"cache"`
		} `json:"steps"`
	}
	pageData(t, b.Bytes(), "run-data", "json", &sum)
	require.Len(t, sum.Steps, 3)
	assert.Equal(t, []int{1000, 0, 900}, sum.Steps[0].Cache, "step 0: written")
	assert.Equal(t, []int{1100, 900, 150}, sum.Steps[1].Cache, "step 1: read and written")
	assert.Nil(t, sum.Steps[2].Cache, "step 2: no cache reported")

	require.NotNil(t, run.Steps[0].Record)
	assert.Equal(t, session.Usage{InputTokens: 1000, CacheWriteTokens: 900, CacheWrite1hTokens: 300}, run.Steps[0].Record.Usage, "step 0: the record's usage")
	assert.Contains(t, b.String(), `class="l-write"`, "the legend names the cache's writes")
}
