package evals

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/reprompt/reprompt/evals/check"
	"github.com/reprompt/reprompt/llm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAppendCase checks the hand-written JSON against encoding/json's.
func TestAppendCase(t *testing.T) {
	c := &CaseResult{Name: "a \"case\"\n\x01é\xff", Figures: Figures{Runs: 2, Passed: 1, PassAt1: 0.5, PassAtK: 2.0 / 3, PassHatK: 1, Steps: Stat{Mean: 2.5, P95: 3}, InputTokens: Stat{Mean: 1234, P95: 5e6},
		CacheRead: Stat{P95: 12}, OutputTokens: Stat{Mean: 0.1}, Cost: Stat{Mean: 1e-7, P95: 3e21}, LatencyMS: Stat{Mean: 12.345678, P95: 99.5}}, Runs: []RunResult{
		{Run: 0, Pass: true, Steps: 2, Usage: llm.Usage{InputTokens: 10, OutputTokens: 2, CachedTokens: 4, ReasoningTokens: 1, CacheWriteTokens: 3, CacheWrite1hTokens: 2}, Cost: 0.000123, LatencyMS: 1.5, Output: json.RawMessage(`{"a": [1, 2]}`)},
		{Run: 1, Error: "boom <&>", Failures: []check.Failure{{Check: "x", Step: -1, Reason: "r\t\\", Golden: "-- step 0/reply --\ncontent: \"hi\"\n"}},
			Grades: []check.Grade{{Check: "judge", Verdict: check.Verdict{Score: 3, Reason: "ok"}}}},
	}}
	got, err := appendCase(nil, c)
	require.NoError(t, err)
	want, err := json.Marshal(c)
	require.NoError(t, err)
	var g, w any
	require.NoError(t, json.Unmarshal(got, &g), "valid JSON: %s", got)
	require.NoError(t, json.Unmarshal(want, &w))
	assert.Empty(t, cmp.Diff(w, g), "appendCase against json.Marshal (-want +got)")

	for _, f := range []Figures{c.Figures, {Runs: 1, Passed: 1, PassAt1: 1, Steps: Stat{Mean: 1, P95: 1}}, {}} {
		fig, err := json.Marshal(f)
		require.NoError(t, err)
		assert.Equal(t, string(fig), string(appendFigures(nil, &f)), "appendFigures against json.Marshal, byte for byte")
	}
	assert.Contains(t, string(got), `"output_tokens":0},"latency_ms":0,`, "a run without a cost: no cost written")
}

// BenchmarkAppendCase writes a case of 5 runs as an eval streams it, one
// run failing with its step's golden text.
func BenchmarkAppendCase(b *testing.B) {
	golden := strings.Repeat("-- step 1/messages --\n[0] (as in step 0)\n[1] assistant\n  call: call_1 read_issue {\"number\":1}\n", 8)
	c := &CaseResult{Name: "issue-17", Figures: Figures{Runs: 5, Passed: 4, PassAt1: 0.8, PassAtK: 1, PassHatK: 0, Steps: Stat{Mean: 2, P95: 2},
		InputTokens: Stat{Mean: 214, P95: 214}, OutputTokens: Stat{Mean: 15, P95: 15}, LatencyMS: Stat{Mean: 0.061482, P95: 0.195443}}}
	for run := range 5 {
		r := RunResult{Run: run, Pass: run != 0, Steps: 2, Usage: llm.Usage{InputTokens: 214, OutputTokens: 15}, LatencyMS: 0.021159 + float64(run)/1e3,
			Output: json.RawMessage(`{"priority":2,"label":"bug"}`)}
		if run == 0 {
			r.Failures = []check.Failure{{Check: "expected", Step: 1, Reason: `answer {"priority":2,"label":"bug"}, want {"priority":1,"label":"bug"}`, Golden: golden}}
		}
		c.Runs = append(c.Runs, r)
	}
	buf, err := appendCase(nil, c)
	require.NoError(b, err)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = appendCase(buf[:0], c)
	}
}

// TestAppendRunUsage checks that every field of llm.Usage is written, as
// encoding/json writes it: a field added to llm.Usage is not lost from
// the result file.
func TestAppendRunUsage(t *testing.T) {
	var r RunResult
	u := reflect.ValueOf(&r.Usage).Elem()
	for i := range u.NumField() {
		require.Equal(t, reflect.Int, u.Field(i).Kind(), "llm.Usage.%s: an int", u.Type().Field(i).Name)
		u.Field(i).SetInt(int64(i + 1))
	}
	got, err := appendRun(nil, &r)
	require.NoError(t, err)
	var back RunResult
	require.NoError(t, json.Unmarshal(got, &back), "%s", got)
	assert.Equal(t, r.Usage, back.Usage, "the usage read back")
}
