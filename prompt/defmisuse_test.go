package prompt_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/prompt"
)

// A definition declared without a name, or a tool without a function, is
// a misuse naming the call site, not a nameless tag or a panic at the
// tool's first call.
func TestDefinitionMisuse(t *testing.T) {
	cases := map[string]prompt.Func{
		"empty Def name":    func(p *prompt.Prompt) error { p.Def("", "a"); return nil },
		"empty System name": func(p *prompt.Prompt) error { p.DefSystem("", "a"); return nil },
		"nil tool": func(p *prompt.Prompt) error {
			prompt.DefTool[struct{}, string](p, "t", "d", nil)
			return nil
		},
		"nil schema tool": func(p *prompt.Prompt) error {
			p.DefSchemaTool("t", "d", []byte(`{"type":"object"}`), nil)
			return nil
		},
		"nil agent": func(p *prompt.Prompt) error { p.DefAgent("a", "d", nil); return nil },
	}
	for name, fn := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := prompt.New("").Execute(0, fn)
			require.Error(t, err)
			var me *prompt.MisuseError
			require.ErrorAs(t, err, &me)
			assert.Contains(t, me.Site, "defmisuse_test.go")
		})
	}
}
