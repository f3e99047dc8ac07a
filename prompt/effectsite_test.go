package prompt_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/prompt"
)

// Issue 8 item 15: an effects misuse arrives as a prompt.Error whose Site
// names the effect's call site, not an empty Site.
func TestEffectsMisuseErrorHasASite(t *testing.T) {
	nopEffect := func(context.Context, *effects.Step) error { return nil }
	tests := []struct {
		name string
		fn   func(step int, site *string) prompt.Func
	}{
		{"hook order", func(step int, site *string) prompt.Func {
			return func(p *prompt.Prompt) error {
				if step == 0 {
					p.Effect(effects.Once, nopEffect)
				}
				*site = next()
				p.Effect(effects.Always, nopEffect)
				return nil
			}
		}},
		{"loop", func(step int, site *string) prompt.Func {
			return func(p *prompt.Prompt) error {
				for range 2 - step {
					*site = next()
					p.Effect(effects.Always, nopEffect)
				}
				return nil
			}
		}},
		{"duplicate key", func(step int, site *string) prompt.Func {
			return func(p *prompt.Prompt) error {
				p.Effect(effects.Always, nopEffect, effects.Key("k"))
				if step == 1 {
					*site = next()
					p.Effect(effects.Always, nopEffect, effects.Key("k"))
				}
				return nil
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := prompt.New("")
			var site string
			_, err := p.Execute(0, tt.fn(0, &site))
			require.NoError(t, err)
			_, err = p.Execute(1, tt.fn(1, &site))
			var pe *prompt.Error
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, 1, pe.Step)
			assert.True(t, strings.HasPrefix(pe.Site, site), "Site = %q, want %s…", pe.Site, site)
			// The message is the contract here: it names the user's call site.
			assert.Contains(t, err.Error(), site)
		})
	}
}
