package runtime_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// TestStableTools runs a prompt that disables its search tool at every odd
// step, with and without Config.StableTools. Without it, the tool list
// changes at every step and the prefix the provider could reuse breaks at
// the tools (PrefixTokens 0); with it, the request's tools are the same
// bytes at every step, each request extends the previous one entirely, and
// a call to search while it is disabled gets an error result saying it is
// not available now.
func TestStableTools(t *testing.T) {
	for _, stable := range []bool{false, true} {
		t.Run(map[bool]string{false: "zero", true: "stable"}[stable], func(t *testing.T) {
			searchRuns := 0
			fn := func(p *prompt.Prompt) error {
				p.DefSystem("role", "You look things up.")
				search := prompt.DefTool(p, "search", "Search the web.", func(ctx context.Context, a struct {
					Query string `json:"query"`
				}) (string, error) {
					searchRuns++
					return "results for " + a.Query, nil
				})
				prompt.DefTool(p, "fetch", "Fetch a page.", func(ctx context.Context, a struct {
					URL string `json:"url"`
				}) (string, error) {
					return "page " + a.URL, nil
				})
				if p.Step()%2 == 1 {
					search.Disable()
				}
				p.User("Find the release date of Go 1.22.")
				return nil
			}
			model := snapshots.Script(
				snapshots.CallTools(snapshots.Call{ID: "s0", Name: "search", Args: `{"query":"go 1.22"}`}),
				snapshots.CallTools(snapshots.Call{ID: "s1", Name: "search", Args: `{"query":"go 1.22 release"}`}), // disabled at step 1
				snapshots.CallTools(snapshots.Call{ID: "f2", Name: "fetch", Args: `{"url":"go.dev/doc/go1.22"}`}),
				snapshots.Text("February 2024."),
			)
			r := runtime.New(model, fn, runtime.Config{StableTools: stable, Counter: charCounter{}}) // exact: no calibration
			var steps []*runtime.Step
			for rec, err := range r.All(context.Background()) {
				require.NoError(t, err, "step %d", len(steps))
				steps = append(steps, rec)
			}
			require.Len(t, steps, 4, "steps")
			reqs := model.Requests()
			require.Len(t, reqs, 4, "requests")

			for n, rec := range steps {
				wantDisabled := []defs.Ref(nil)
				if n%2 == 1 {
					wantDisabled = []defs.Ref{{Kind: defs.KindTool, Name: "search"}}
				}
				assert.Equal(t, wantDisabled, rec.Disabled, "Step.Disabled at step %d", n)
			}
			require.Len(t, steps[1].ToolResults, 1, "tool results of step 1")
			res := steps[1].ToolResults[0]
			assert.True(t, res.IsError, "the call of the disabled tool is an error")
			assert.Equal(t, 1, searchRuns, "search runs (the call at step 1 is not run)")

			tools := func(n int) string {
				b, err := json.Marshal(reqs[n].Tools)
				require.NoError(t, err, "marshal the tools of request %d", n)
				return string(b)
			}
			if !stable {
				assert.Len(t, reqs[1].Tools, 1, "tools of request 1 (search withdrawn)")
				assert.NotEqual(t, tools(0), tools(1), "tools of requests 0 and 1")
				for n := 1; n < len(steps); n++ {
					assert.Equal(t, 0, steps[n].PrefixTokens, "PrefixTokens at step %d (the tool list changed)", n)
					assert.Contains(t, steps[n].Cache, "tool list changed", "Step.Cache at step %d", n)
				}
				assert.Equal(t, `error: tool "search" is disabled at this step and was not run`, res.Content, "result of the disabled call")
				return
			}
			for n := 1; n < len(reqs); n++ {
				assert.Len(t, reqs[n].Tools, 2, "tools of request %d", n)
				assert.Equal(t, tools(0), tools(n), "tools of request %d: the bytes of request 0's", n)
				assert.Equal(t, steps[n-1].InputTokens, steps[n].PrefixTokens,
					"PrefixTokens at step %d: the whole previous request, tools and system included", n)
				assert.Empty(t, steps[n].Cache, "Step.Cache at step %d", n)
			}
			assert.Greater(t, steps[1].PrefixTokens, 0, "PrefixTokens at step 1")
			assert.Equal(t, `error: tool "search" is not available now and was not run; it may be available at a later step`,
				res.Content, "result of the disabled call")
		})
	}
}
