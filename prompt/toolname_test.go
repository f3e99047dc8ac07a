package prompt_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/prompt"
)

func noTool(context.Context, struct{}) (string, error) { return "", nil }

func noAgent(*prompt.Prompt) error { return nil }

// Issue 8 item 8: tool names are checked when declared, against the
// pattern of the OpenAI API, by DefTool and DefAgent alike.
func TestToolNamesAreCheckedAtDeclaration(t *testing.T) {
	tests := []struct {
		name  string
		valid bool
	}{
		{"get_weather", true},
		{"Tool-2", true},
		{strings.Repeat("a", 64), true},
		{"my tool", false},
		{"", false},
		{strings.Repeat("a", 65), false},
		{strings.Repeat("a", 200), false},
		{"x<y>", false},
		{"café", false},
		{"a.b", false},
	}
	declare := map[string]func(p *prompt.Prompt, name string){
		"DefTool":  func(p *prompt.Prompt, name string) { prompt.DefTool(p, name, "d", noTool) },
		"DefAgent": func(p *prompt.Prompt, name string) { p.DefAgent(name, "d", noAgent) },
	}
	for hook, decl := range declare {
		for _, tt := range tests {
			t.Run(hook+"/"+tt.name, func(t *testing.T) {
				assert.Equal(t, tt.valid, prompt.ValidToolName(tt.name))
				var site string
				_, err := prompt.New("").Execute(0, func(p *prompt.Prompt) error {
					site = next()
					decl(p, tt.name)
					return nil
				})
				if tt.valid {
					require.NoError(t, err)
					return
				}
				var me *prompt.MisuseError
				require.ErrorAs(t, err, &me)
				var ne *prompt.ToolNameError
				require.ErrorAs(t, err, &ne)
				assert.Equal(t, tt.name, ne.Name)
				assert.Equal(t, hook, me.Hook)
				// The site is the declaration inside decl, in this file.
				assert.True(t, strings.HasPrefix(me.Site, "toolname_test.go:"), "site %q", me.Site)
				assert.NotEqual(t, site, me.Site)
				var pe *prompt.Error
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, me.Site, pe.Site)
				assert.False(t, pe.Panicked)
				// The message is the contract here: it gives the pattern a
				// name must match.
				assert.Contains(t, err.Error(), "^[a-zA-Z0-9_-]{1,64}$")
			})
		}
	}
}

// Issue 8 item 8: a second declaration of a tool name in one execution is
// a misuse naming both call sites, whatever declared them.
func TestDuplicateToolNameNamesBothSites(t *testing.T) {
	tests := []struct {
		name          string
		first, second func(p *prompt.Prompt)
		hook          string
	}{
		{"tool twice",
			func(p *prompt.Prompt) { prompt.DefTool(p, "search", "d", noTool) },
			func(p *prompt.Prompt) { prompt.DefTool(p, "search", "d", noTool) }, "DefTool"},
		{"tool then agent",
			func(p *prompt.Prompt) { prompt.DefTool(p, "search", "d", noTool) },
			func(p *prompt.Prompt) { p.DefAgent("search", "d", noAgent) }, "DefAgent"},
		{"agent then tool",
			func(p *prompt.Prompt) { p.DefAgent("search", "d", noAgent) },
			func(p *prompt.Prompt) { prompt.DefTool(p, "search", "d", noTool) }, "DefTool"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := prompt.New("").Execute(0, func(p *prompt.Prompt) error {
				tt.first(p)
				tt.second(p)
				return nil
			})
			var de *prompt.DuplicateToolError
			require.ErrorAs(t, err, &de)
			var me *prompt.MisuseError
			require.ErrorAs(t, err, &me)
			assert.Equal(t, tt.hook, me.Hook)
			assert.Equal(t, "search", de.Name)
			assert.True(t, strings.HasPrefix(de.First, "toolname_test.go:"), "first %q", de.First)
			assert.True(t, strings.HasPrefix(de.Now, "toolname_test.go:"), "now %q", de.Now)
			assert.NotEqual(t, de.First, de.Now)
			// The message is the contract here: it names both call sites.
			assert.Contains(t, err.Error(), de.First)
			assert.Contains(t, err.Error(), de.Now)
		})
	}
}

// Declaring the same tools at every execution is the normal case, not a
// duplicate.
func TestToolsRedeclaredAtEveryExecution(t *testing.T) {
	p := prompt.New("")
	for step := range 3 {
		_, err := p.Execute(step, func(p *prompt.Prompt) error {
			prompt.DefTool(p, "search", "d", noTool)
			p.DefAgent("helper", "d", noAgent)
			return nil
		})
		require.NoError(t, err, "step %d", step)
	}
	// A failed execution does not leave names behind either.
	_, err := p.Execute(3, func(p *prompt.Prompt) error {
		prompt.DefTool(p, "search", "d", noTool)
		return errors.New("stop")
	})
	require.Error(t, err)
	_, err = p.Execute(4, func(p *prompt.Prompt) error {
		prompt.DefTool(p, "search", "d", noTool)
		return nil
	})
	require.NoError(t, err)
}
