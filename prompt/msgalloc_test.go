package prompt_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/prompt"
)

// Declaring, at every execution, a message that was added already costs
// nothing once its call site is known.
func TestDeclaredMessageAgainAllocatesNothing(t *testing.T) {
	p := prompt.New("")
	fn := func(p *prompt.Prompt) error {
		p.User("Count.")
		return nil
	}
	added, err := p.Execute(0, fn)
	require.NoError(t, err)
	require.Len(t, added, 1)
	step := 1
	allocs := testing.AllocsPerRun(100, func() {
		added, err := p.Execute(step, fn)
		if err != nil || len(added) != 0 {
			t.Fatalf("Execute = %v, %v", added, err)
		}
		step++
	})
	assert.Equal(t, 0.0, allocs)
}
