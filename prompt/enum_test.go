package prompt_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/prompt"
)

type severity string

const (
	low  severity = "low"
	high severity = "high"
)

func (severity) Enum() []any { return []any{low, high} }

type level int

func (level) Enum() []any { return []any{1, 2, 3} }

type triage struct {
	Severity severity   `json:"severity"`
	Maybe    *severity  `json:"maybe,omitempty"`
	Levels   []level    `json:"levels"`
	Tags     []severity `json:"tags,omitempty"`
}

// A type with an Enum method is an enum in the JSON Schema of a typed
// answer: the model is told the values, and an answer outside them is
// refused; an optional enum also takes null.
func TestEnumInTypedAnswer(t *testing.T) {
	p := prompt.New("")
	_, err := p.Execute(0, func(p *prompt.Prompt) error {
		prompt.DefOutput[triage](p, "triage", "The triage.")
		return nil
	})
	require.NoError(t, err)
	o := outputOf(t, p)
	var sch struct {
		Properties map[string]struct {
			Enum  []any `json:"enum"`
			Items *struct {
				Enum []any `json:"enum"`
			} `json:"items"`
		} `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(o.Schema, &sch))
	assert.Equal(t, []any{"low", "high"}, sch.Properties["severity"].Enum)
	assert.Equal(t, []any{"low", "high", nil}, sch.Properties["maybe"].Enum, "an optional enum admits null")
	require.NotNil(t, sch.Properties["levels"].Items)
	assert.Equal(t, []any{1.0, 2.0, 3.0}, sch.Properties["levels"].Items.Enum)

	assert.NoError(t, o.Validate(json.RawMessage(`{"severity":"high","levels":[1,3]}`)))
	assert.NoError(t, o.Validate(json.RawMessage(`{"severity":"low","maybe":null,"levels":[]}`)))
	assert.Error(t, o.Validate(json.RawMessage(`{"severity":"catastrophic","levels":[]}`)), "a value outside the enum")
	assert.Error(t, o.Validate(json.RawMessage(`{"severity":"low","levels":[4]}`)), "an integer outside the enum")
}

// The same holds for a tool's arguments and a question's answer.
func TestEnumInToolArgumentsAndQuestions(t *testing.T) {
	p := prompt.New("")
	_, err := p.Execute(0, func(p *prompt.Prompt) error {
		prompt.DefTool(p, "file", "File a bug.", func(context.Context, struct {
			Severity severity `json:"severity"`
		}) (string, error) {
			return "filed", nil
		})
		return nil
	})
	require.NoError(t, err)
	d, ok := p.Registry().Lookup(defs.KindTool, "file")
	require.True(t, ok)
	assert.Contains(t, string(d.Tool.Schema), `"enum":["low","high"]`)
	assert.NoError(t, d.Tool.Validate(json.RawMessage(`{"severity":"low"}`)))
	assert.True(t, prompt.IsArgumentsError(d.Tool.Validate(json.RawMessage(`{"severity":"urgent"}`))))

	_, err = prompt.Ask[severity](prompt.WithCallID(context.Background(), "c1"), "How bad?")
	var ae *prompt.AskError
	require.ErrorAs(t, err, &ae)
	assert.JSONEq(t, `{"type":"string","enum":["low","high"]}`, string(ae.Question.Schema))
	assert.NoError(t, ae.Question.Validate(json.RawMessage(`"high"`)))
	assert.Error(t, ae.Question.Validate(json.RawMessage(`"urgent"`)))
}

type badEnum struct{ X int }

func (badEnum) Enum() []any { return []any{badEnum{}} }

// An enum type that is not a string, a number or a bool is a misuse
// naming it.
func TestEnumOfAStructIsRefused(t *testing.T) {
	p := prompt.New("")
	_, err := p.Execute(0, func(p *prompt.Prompt) error {
		prompt.DefOutput[struct {
			B badEnum `json:"b"`
		}](p, "out", "Out.")
		return nil
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "enum type prompt_test.badEnum")
}

func outputOf(t *testing.T, p *prompt.Prompt) *defs.Output {
	t.Helper()
	o := p.Output()
	require.NotNil(t, o, "no output declared")
	return o
}
