package evals_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/reprompt/reprompt/evals"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLoad(t *testing.T) {
	for _, file := range []string{"testdata/issues.jsonl", "testdata/issues.yaml"} {
		t.Run(filepath.Ext(file), func(t *testing.T) {
			cs, err := evals.Load[issue, triage](file)
			require.NoError(t, err)
			require.Len(t, cs, 2)
			assert.Equal(t, "crash", cs[0].Name)
			assert.Equal(t, issue{Number: 1, Text: "Crash on start."}, cs[0].Input)
			assert.Equal(t, &triage{Priority: 1, Label: "bug"}, cs[0].Expected)
			require.Len(t, cs[0].Checks, 2, "crash: checks")
			assert.Equal(t, `called read_issue {"number":1}`, cs[0].Checks[0].Name())
			assert.Equal(t, "within 2 steps", cs[0].Checks[1].Name())
			assert.Empty(t, cs[1].Checks, "typo: no checks")

			// The cases run: the file's checks pass on a right run.
			e := &evals.Eval[issue, triage]{Cases: cs, Prompt: triageAgent, Models: scripted(cs, nil)}
			rep, err := e.Run(t.Context(), nil)
			require.NoError(t, err)
			assert.InDelta(t, 1.0, rep.Overall.PassAt1, 1e-9, "pass@1 of %v", rep.Cases)
		})
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct{ file, text, err string }{
		"jsonl line":   {"a.jsonl", "{\"name\": \"a\", \"input\": {}}\n{\"name\": \"b\", \"inptu\": {}}\n", "a.jsonl:2: json: unknown field \"inptu\""},
		"empty check":  {"b.jsonl", `{"name": "a", "input": {}, "checks": [{}]}`, "b.jsonl:1: check 0: a check that checks nothing"},
		"yaml line":    {"c.yaml", "- name: a\n  input: {}\n- name: b\n  input: {number: x}\n", "c.yaml:3: json: cannot unmarshal"},
		"yaml mapping": {"d.yml", "name: a\n", "d.yml:1: a dataset is a sequence of cases"},
		"args alone":   {"e.jsonl", `{"name": "a", "input": {}, "checks": [{"args": {}}]}`, "args without called or not_called"},
		"unknown ext":  {"f.csv", "", "a dataset is a .jsonl or .yaml file"},
	} {
		path := filepath.Join(dir, tc.file)
		require.NoError(t, os.WriteFile(path, []byte(tc.text), 0o644))
		_, err := evals.Load[issue, triage](path)
		assert.ErrorContains(t, err, tc.err, name)
	}
}

func FuzzLoadJSONL(f *testing.F) {
	f.Add([]byte(`{"name": "a", "input": {"number": 1}, "checks": [{"called": "x", "args": {"a": [1]}}]}`))
	f.Add([]byte("{\"state\": 1}\n\n{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "f.jsonl")
		require.NoError(t, os.WriteFile(path, data, 0o644))
		evals.LoadJSONL[issue, triage](path) // must not panic
	})
}

type dated struct {
	Date string    `json:"date"`
	At   time.Time `json:"at,omitzero"`
}

// TestLoadYAMLDates checks that a YAML value that looks like a date is
// read as written into a string (not made "2024-01-02T00:00:00Z"), and
// still into a time.Time.
func TestLoadYAMLDates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.yaml")
	require.NoError(t, os.WriteFile(path, []byte("- name: a\n  input: {date: 2024-01-02}\n  expected: {date: 2024-01-02 10:00:00}\n- name: b\n  input: {at: 2024-01-02}\n"), 0o644))
	cs, err := evals.Load[dated, dated](path)
	require.NoError(t, err)
	require.Len(t, cs, 2)
	assert.Equal(t, dated{Date: "2024-01-02"}, cs[0].Input, "a date into a string")
	assert.Equal(t, &dated{Date: "2024-01-02 10:00:00"}, cs[0].Expected, "a time into a string")
	assert.Equal(t, dated{At: time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)}, cs[1].Input, "a date into a time.Time")
}
