package prompt_test

import (
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/prompt"
)

// TestValidationCacheKeepsEveryCheck checks that remembering the last valid
// arguments never lets other arguments through, and that validating them
// again costs no allocation.
func TestValidationCacheKeepsEveryCheck(t *testing.T) {
	tool := declare(t, func(p *prompt.Prompt) error {
		prompt.DefTool(p, "search", "d", func(_ context.Context, a searchArgs) (string, error) { return a.Query, nil })
		return nil
	}, "search")
	valid := json.RawMessage(`{"query":"x"}`)
	for _, args := range []string{`{"query":"x"}`, `{"query":"x" }`, `{"query":5}`, `{"query":"x","extra":1}`, ``, `{"query":"x"}`} {
		err := tool.Validate(json.RawMessage(args))
		if args == string(valid) || args == `{"query":"x" }` {
			assert.NoError(t, err, "Validate(%s)", args)
		} else {
			assert.Error(t, err, "Validate(%s)", args)
		}
	}
	allocs := testing.AllocsPerRun(10, func() { _ = tool.Validate(valid) })
	assert.Equal(t, 0.0, allocs, "allocations to validate the last valid arguments again")
}

// TestNoArgumentToolsStillRejectBadJSON checks that a tool whose argument
// type has no fields skips decoding only for arguments it validated.
func TestNoArgumentToolsStillRejectBadJSON(t *testing.T) {
	calls := 0
	tool := declare(t, func(p *prompt.Prompt) error {
		prompt.DefTool(p, "noop", "d", func(context.Context, struct{}) (string, error) { calls++; return "ok", nil })
		return nil
	}, "noop")
	require.NoError(t, tool.Validate(json.RawMessage(`{}`)), "Validate({})")
	for _, tc := range []struct {
		args string
		ok   bool
	}{{`{}`, true}, {``, true}, {`{`, false}, {`[1]`, false}, {`{"x":1}`, true}} {
		_, err := tool.Call(context.Background(), json.RawMessage(tc.args))
		if tc.ok {
			assert.NoError(t, err, "Call(%s)", tc.args)
		} else {
			assert.ErrorAs(t, err, new(*prompt.ArgumentsError), "Call(%s)", tc.args)
		}
	}
	assert.Equal(t, 3, calls, "times the tool ran")
}

// TestResultTextAsJSON checks the results written without json.Marshal
// against it.
func TestResultTextAsJSON(t *testing.T) {
	for _, v := range []any{0, 7, -42, 1 << 40, math.MaxInt, math.MinInt, true, false} {
		var tool = declare(t, func(p *prompt.Prompt) error {
			switch x := v.(type) {
			case int:
				prompt.DefTool(p, "r", "d", func(context.Context, struct{}) (int, error) { return x, nil })
			case bool:
				prompt.DefTool(p, "r", "d", func(context.Context, struct{}) (bool, error) { return x, nil })
			}
			return nil
		}, "r")
		got, err := tool.Call(context.Background(), json.RawMessage(`{}`))
		want, _ := json.Marshal(v)
		assert.NoError(t, err, "result %v", v)
		assert.Equal(t, string(want), got, "result %v", v)
	}
}
