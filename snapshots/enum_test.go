package snapshots_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

type severity string

func (severity) Enum() []any { return []any{severity("low"), severity("high")} }

type bugReport struct {
	Severity severity `json:"severity"`
}

// A golden file shows an enum in the answer's schema, and the answer
// outside it sent back to the model.
func TestEnumGolden(t *testing.T) {
	fn := func(p *prompt.Prompt) error {
		prompt.DefOutput[bugReport](p, "report", "The bug report.")
		p.User("The server is on fire.")
		return nil
	}
	model := snapshots.Script(snapshots.Text(`{"severity":"catastrophic"}`), snapshots.Text(`{"severity":"high"}`))
	res := snapshots.Run(t, fn, model)
	require.NotNil(t, res)
	r, err := runtime.Output[bugReport](res)
	require.NoError(t, err)
	assert.Equal(t, severity("high"), r.Severity)
}
