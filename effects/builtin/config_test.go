package builtin_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/effects/builtin"
)

const goodConfig = `model: gpt-4o
effects:
  - kind: trim_tool_results
    params:
      max_result_length: 400
      preserve_recent: 3
      batch: 2
  - kind: compact
    params: {threshold: 0.75, target: 0.5, strategy: heuristic, read_tools: [cat], keep_recent_tokens: 5000}
    when: step > 2 && tokens > 0.5 * window
  - kind: limits
    params:
      max_iterations: 40
      max_cost: 2.5
      max_time: 10m
      warn: 0.9
`

func TestParse(t *testing.T) {
	cfg, err := builtin.Parse("agent.yaml", []byte(goodConfig))
	require.NoError(t, err)
	require.Equal(t, builtin.ProfileFor("gpt-4o"), cfg.Profile, "config %+v", cfg)
	require.Len(t, cfg.Effects, 3, "config %+v", cfg)
	e := cfg.Effects
	assert.Equal(t, "trim_tool_results", e[0].Kind, "trim %+v %+v", e[0], e[0].Trim)
	assert.Equal(t, effects.AfterReply, e[0].Phase, "trim %+v %+v", e[0], e[0].Trim)
	assert.Equal(t, builtin.TrimConfig{MaxResultLength: 400, PreserveRecent: 3, Batch: 2}, *e[0].Trim, "trim %+v %+v", e[0], e[0].Trim)
	c := e[1].Compact
	assert.Equal(t, effects.BeforeCall, e[1].Phase, "compact %+v %+v", e[1], c)
	assert.Equal(t, 0.75, c.Threshold, "compact %+v %+v", e[1], c)
	assert.Equal(t, 0.5, c.Target, "compact %+v %+v", e[1], c)
	assert.Equal(t, builtin.StrategyHeuristic, c.Strategy, "compact %+v %+v", e[1], c)
	assert.Equal(t, 5000, c.KeepRecentTokens, "compact %+v %+v", e[1], c)
	assert.Len(t, c.Files.ReadTools, 1, "compact %+v %+v", e[1], c)
	assert.Equal(t, "step > 2 && tokens > 0.5 * window", e[1].When, "compact %+v %+v", e[1], c)
	assert.Equal(t, 8, e[1].Line, "compact %+v %+v", e[1], c)
	assert.Equal(t, 5, e[1].Column, "compact %+v %+v", e[1], c)
	l := e[2].Limits
	assert.Equal(t, (builtin.LimitsConfig{MaxIterations: 40, MaxCost: 2.5, MaxTime: 10 * time.Minute, Warn: 0.9}), *l, "limits %+v", l)
}

func TestParseDefaults(t *testing.T) {
	for _, src := range []string{"model: gpt-4o\n", "model: gpt-4o\neffects: []\n", "window: 8192\nreserve: 1024\neffects:\n"} {
		cfg, err := builtin.Parse("a.yaml", []byte(src))
		require.NoError(t, err, "%q", src)
		if assert.Len(t, cfg.Effects, 2, "%q: effects %+v", src, cfg.Effects) {
			assert.NotZero(t, cfg.Effects[1].Compact.Window, "%q: effects %+v", src, cfg.Effects)
		}
	}
	cfg, err := builtin.Parse("empty.yaml", nil)
	assert.NoError(t, err, "empty file")
	assert.Empty(t, cfg.Effects, "empty file: %+v", cfg)
}

// TestParseErrors compares the *ConfigError values Parse joins, whole: the
// position, and Msg, which is what a user reads to fix the file.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, src string
		want      []builtin.ConfigError
	}{
		{"unknown kind", "effects:\n  - kind: compress\n", []builtin.ConfigError{at(2, 11, `unknown effect kind "compress" (want trim_tool_results, compact or limits)`)}},
		{"missing kind", "effects:\n  - params: {}\n", []builtin.ConfigError{at(2, 5, "effect 0: kind is missing")}},
		{"unknown param", "effects:\n  - kind: compact\n    params:\n      treshold: 0.5\n", []builtin.ConfigError{at(4, 7, `compact: unknown param "treshold" (want one of arg_keys, fallback, keep_recent_tokens, max_failures, max_result_length, modify_tools, read_tools, reserve, state_key, strategy, summary_input_tokens, summary_max_tokens, system_prompt, target, threshold, trim_recent, window, window_messages)`)}},
		{"mistyped int", "effects:\n  - kind: trim_tool_results\n    params:\n      max_result_length: lots\n", []builtin.ConfigError{at(4, 26, `max_result_length: want an integer, got "lots"`)}},
		{"float for int", "effects:\n  - kind: trim_tool_results\n    params: {batch: 1.5}\n", []builtin.ConfigError{at(3, 21, "batch: want an integer, got float 1.5")}},
		{"bad threshold", "effects:\n  - kind: compact\n    params: {threshold: 2}\n", []builtin.ConfigError{at(3, 25, "threshold: want a fraction in (0, 1], got 2")}},
		{"bad strategy", "effects:\n  - kind: compact\n    params: {strategy: magic}\n", []builtin.ConfigError{at(3, 24, `strategy: unknown strategy "magic" (want summarize, truncate, window or heuristic)`)}},
		{"bad fallback", "effects:\n  - kind: compact\n    params: {fallback: summarize}\n", []builtin.ConfigError{at(3, 24, `fallback: unknown strategy "summarize" (want truncate, window or heuristic)`)}},
		{"bad duration", "effects:\n  - kind: limits\n    params: {max_time: soon}\n", []builtin.ConfigError{at(3, 24, `max_time: want a duration like "90s" or a number of seconds, got "soon"`)}},
		{"huge duration", "effects:\n  - kind: limits\n    params: {max_time: 1e11}\n", []builtin.ConfigError{at(3, 24, "max_time: want a number of seconds between 0 and 9223372036, got 1e11")}},
		{"list of ints", "effects:\n  - kind: compact\n    params: {read_tools: [1]}\n", []builtin.ConfigError{at(3, 27, "read_tools: want a string, got int 1")}},
		{"unknown key", "effect:\n  - kind: compact\n", []builtin.ConfigError{at(1, 1, `unknown key "effect" (want model, window, reserve, cached_input, when_timeout or effects)`)}},
		{"unknown effect key", "effects:\n  - kind: compact\n    if: true\n", []builtin.ConfigError{at(3, 5, `effect 0: unknown key "if" (want kind, params or when)`)}},
		{"bad expression", "effects:\n  - kind: compact\n    when: tokens >\n", []builtin.ConfigError{at(3, 18, "when: unexpected token EOF")}},
		{"unknown variable", "effects:\n  - kind: compact\n    when: tokenz > 5\n", []builtin.ConfigError{at(3, 11, "when: unknown name tokenz")}},
		{"quoted expression", "effects:\n  - kind: compact\n    when: \"step > 2 && tokenz\"\n", []builtin.ConfigError{at(3, 24, "when: unknown name tokenz")}},
		{"not bool", "effects:\n  - kind: compact\n    when: tokens + 1\n", []builtin.ConfigError{at(3, 11, "when: expected bool, but got int")}},
		{"not a list", "effects: 3\n", []builtin.ConfigError{at(1, 10, "effects: want a list, got int 3")}},
		{"unknown model", "model: my-model\n", []builtin.ConfigError{at(1, 8, `unknown model "my-model": give its window`)}},
		{"duplicate param", "effects:\n  - kind: limits\n    params: {max_iterations: 10, max_iterations: 20}\n", []builtin.ConfigError{at(3, 34, `limits: duplicate key "max_iterations"`)}},
		{"duplicate effect key", "effects:\n  - kind: limits\n    kind: compact\n", []builtin.ConfigError{at(3, 5, `effect 0: duplicate key "kind"`)}},
		{"duplicate effects list", "effects:\n  - kind: limits\n    params: {max_iterations: 10}\neffects:\n  - kind: compact\n", []builtin.ConfigError{at(4, 1, `duplicate key "effects"`)}},
		{"yaml syntax", "effects:\n  - kind: [\n", []builtin.ConfigError{at(2, 1, "did not find expected node content")}},
		{"several", "effects:\n  - kind: compact\n    params: {threshold: x, max_failures: -1}\n", []builtin.ConfigError{
			at(3, 25, `threshold: want a number, got "x"`),
			at(3, 42, "max_failures: want a number ≥ 0, got -1"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := builtin.Parse("c.yaml", []byte(tt.src))
			require.Error(t, err, "no error; config %+v", cfg)
			assert.Empty(t, cmp.Diff(tt.want, configErrors(t, err)), "errors mismatch (-want +got)")
		})
	}
}

// at is the *ConfigError Parse reports for file c.yaml.
func at(line, col int, msg string) builtin.ConfigError {
	return builtin.ConfigError{File: "c.yaml", Line: line, Column: col, Msg: msg}
}

// configErrors returns the *ConfigError values err joins, failing the test
// on any other error.
func configErrors(t *testing.T, err error) []builtin.ConfigError {
	t.Helper()
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	var out []builtin.ConfigError
	for _, e := range errs {
		ce, ok := e.(*builtin.ConfigError)
		require.True(t, ok, "%T %v is not a *builtin.ConfigError", e, e)
		out = append(out, *ce)
	}
	return out
}

func TestLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "effects.yaml")
	require.NoError(t, os.WriteFile(path, []byte("effects:\n  - kind: limits\n    params: {max_tokens: x}\n"), 0o644))
	_, err := builtin.Load(path)
	want := []builtin.ConfigError{{File: path, Line: 3, Column: 26, Msg: `max_tokens: want an integer, got "x"`}}
	assert.Empty(t, cmp.Diff(want, configErrors(t, err)), "errors mismatch (-want +got)")
	_, err = builtin.Load(filepath.Join(t.TempDir(), "missing.yaml"))
	require.ErrorIs(t, err, os.ErrNotExist, "missing file: %v", err)
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(goodConfig))
	f.Add([]byte("effects:\n  - kind: compact\n    when: tokens >\n"))
	f.Add([]byte("model: llama3\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := builtin.Parse("f.yaml", data)
		if err != nil {
			// Every error is a *ConfigError with a position, on one line
			// (the joined errors print one a line).
			for _, ce := range configErrors(t, err) {
				require.Equal(t, "f.yaml", ce.File, "error without a position or on several lines: %#v", ce)
				require.GreaterOrEqual(t, ce.Line, 1, "error without a position or on several lines: %#v", ce)
				require.GreaterOrEqual(t, ce.Column, 1, "error without a position or on several lines: %#v", ce)
				require.NotContains(t, ce.Msg, "\n", "error without a position or on several lines: %#v", ce)
			}
			return
		}
		for _, e := range cfg.Effects {
			n := 0
			for _, set := range []bool{e.Trim != nil, e.Compact != nil, e.Limits != nil} {
				if set {
					n++
				}
			}
			require.Equal(t, 1, n, "effect with several configs: %+v", e)
		}
	})
}
