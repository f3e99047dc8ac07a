package evals

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/reprompt/reprompt/evals/check"
	"go.yaml.in/yaml/v3"
)

// Case is one case of a dataset: an input for the prompt under test, the
// output expected (if any), and checks of its own, run besides the eval's.
type Case[In, Out any] struct {
	// Name names the case in reports and baselines; unique in a dataset.
	// Empty, the eval names it "case-N", N its position from 1.
	Name string `json:"name"`
	// Input is what the prompt function is built from (Eval.Prompt).
	Input In `json:"input"`
	// Expected, if not nil, is the answer a run must give: checked as
	// check.OutputEquals does.
	Expected *Out `json:"expected,omitempty"`
	// Checks are this case's checks, run after the eval's. In a file,
	// "checks" holds CheckSpecs, which Load turns into Checks.
	Checks []check.Check `json:"-"`
}

// CheckSpec is a check written in a dataset file: each field set is one
// check, so one spec may hold several. Field names are the JSON (and YAML)
// keys:
//
//	{"called": "read_issue", "args": {"number": 42}}   check.Called("read_issue", {"number": 42})
//	{"not_called": "delete_issue"}                     check.NotCalled("delete_issue", nil)
//	{"order": ["read_issue", "label"]}                 check.CalledInOrder
//	{"effect": "trim"}                                 check.EffectRan
//	{"state": {"labels": ["bug"]}}                     check.StateEquals, a key each
//	{"max_steps": 4, "max_tokens": 2000, "max_cost": 0.01}
//	{"no_tool_error": true}                            check.NoToolError
//	{"approval": "pay"}                                check.ApprovalAsked ("*": any tool)
type CheckSpec struct {
	Called      string         `json:"called,omitempty"`
	NotCalled   string         `json:"not_called,omitempty"`
	Args        any            `json:"args,omitempty"`
	Order       []string       `json:"order,omitempty"`
	Effect      string         `json:"effect,omitempty"`
	State       map[string]any `json:"state,omitempty"`
	MaxSteps    int            `json:"max_steps,omitempty"`
	MaxTokens   int            `json:"max_tokens,omitempty"`
	MaxCost     float64        `json:"max_cost,omitempty"`
	NoToolError bool           `json:"no_tool_error,omitempty"`
	Approval    string         `json:"approval,omitempty"`
}

// Checks returns the checks s describes, in the order of its fields.
func (s CheckSpec) Checks() ([]check.Check, error) {
	var cs []check.Check
	if s.Args != nil && s.Called == "" && s.NotCalled == "" {
		return nil, fmt.Errorf("args without called or not_called")
	}
	if s.Called != "" {
		cs = append(cs, check.Called(s.Called, s.Args))
	}
	if s.NotCalled != "" {
		cs = append(cs, check.NotCalled(s.NotCalled, s.Args))
	}
	if len(s.Order) > 0 {
		cs = append(cs, check.CalledInOrder(s.Order...))
	}
	if s.Effect != "" {
		cs = append(cs, check.EffectRan(s.Effect))
	}
	for _, k := range sortedKeys(s.State) {
		cs = append(cs, check.StateEquals(k, s.State[k]))
	}
	if s.MaxSteps > 0 {
		cs = append(cs, check.MaxSteps(s.MaxSteps))
	}
	if s.MaxTokens > 0 {
		cs = append(cs, check.MaxTokens(s.MaxTokens))
	}
	if s.MaxCost > 0 {
		cs = append(cs, check.MaxCost(s.MaxCost))
	}
	if s.NoToolError {
		cs = append(cs, check.NoToolError())
	}
	if s.Approval != "" {
		tool := s.Approval
		if tool == "*" {
			tool = ""
		}
		cs = append(cs, check.ApprovalAsked(tool))
	}
	if len(cs) == 0 {
		return nil, fmt.Errorf("a check that checks nothing")
	}
	return cs, nil
}

// fileCase is a case as a file holds it.
type fileCase[In, Out any] struct {
	Name     string      `json:"name"`
	Input    In          `json:"input"`
	Expected *Out        `json:"expected,omitempty"`
	Checks   []CheckSpec `json:"checks,omitempty"`
}

func (fc *fileCase[In, Out]) toCase() (Case[In, Out], error) {
	c := Case[In, Out]{Name: fc.Name, Input: fc.Input, Expected: fc.Expected}
	for i, s := range fc.Checks {
		cs, err := s.Checks()
		if err != nil {
			return c, fmt.Errorf("check %d: %w", i, err)
		}
		c.Checks = append(c.Checks, cs...)
	}
	return c, nil
}

// Load reads a dataset file: JSON Lines when its name ends in .jsonl,
// YAML when it ends in .yaml or .yml. See LoadJSONL and LoadYAML.
func Load[In, Out any](path string) ([]Case[In, Out], error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".jsonl":
		return LoadJSONL[In, Out](path)
	case ".yaml", ".yml":
		return LoadYAML[In, Out](path)
	}
	return nil, fmt.Errorf("load %s: a dataset is a .jsonl or .yaml file", path)
}

// LoadJSONL reads a dataset from a JSON Lines file: one case a line, an
// object with "name", "input" (decoded into In with encoding/json),
// "expected" (into Out; optional) and "checks" (CheckSpecs; optional).
// Blank lines are skipped. An error names the file and the line; unknown
// fields are errors, so that a misspelt key is not silently ignored.
func LoadJSONL[In, Out any](path string) ([]Case[In, Out], error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var cases []Case[In, Out]
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		c, err := decodeCase[In, Out](line)
		if err != nil {
			return nil, fmt.Errorf("load %s:%d: %w", path, n, err)
		}
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	return cases, nil
}

// LoadYAML reads a dataset from a YAML file: a sequence of cases, each a
// mapping with the keys of LoadJSONL. The values are converted to JSON and
// decoded with encoding/json, so In and Out need json tags only (a value
// that YAML reads as a timestamp, 2024-01-02, stays its text, unless the
// case decodes only as a time). An error names the file and the case's
// line.
func LoadYAML[In, Out any](path string) ([]Case[In, Out], error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	seq := doc.Content[0]
	if seq.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("load %s:%d: a dataset is a sequence of cases", path, seq.Line)
	}
	cases := make([]Case[In, Out], 0, len(seq.Content))
	for _, n := range seq.Content {
		c, err := yamlCase[In, Out](n)
		if err != nil {
			return nil, fmt.Errorf("load %s:%d: %w", path, n.Line, err)
		}
		cases = append(cases, c)
	}
	return cases, nil
}

// yamlCase decodes the case n, through JSON. A plain scalar that YAML
// reads as a timestamp (2024-01-02) is kept as its text, as a string
// field wants it; only if the case does not decode so are they made
// times (RFC 3339 in JSON), for a time.Time field.
func yamlCase[In, Out any](n *yaml.Node) (Case[In, Out], error) {
	var times []*yaml.Node
	var walk func(*yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.ScalarNode && n.Tag == "!!timestamp" {
			times = append(times, n)
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(n)
	decode := func() (Case[In, Out], error) {
		var v any
		if err := n.Decode(&v); err != nil {
			return Case[In, Out]{}, err
		}
		js, err := json.Marshal(v)
		if err != nil {
			return Case[In, Out]{}, err
		}
		return decodeCase[In, Out](js)
	}
	if len(times) == 0 {
		return decode()
	}
	for _, t := range times {
		t.Tag = "!!str"
	}
	c, err := decode()
	if err == nil {
		return c, nil
	}
	for _, t := range times {
		t.Tag = "!!timestamp"
	}
	if c, terr := decode(); terr == nil {
		return c, nil
	}
	return c, err
}

func decodeCase[In, Out any](js []byte) (Case[In, Out], error) {
	var fc fileCase[In, Out]
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&fc); err != nil {
		return Case[In, Out]{}, err
	}
	return fc.toCase()
}
