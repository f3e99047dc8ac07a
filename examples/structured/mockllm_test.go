package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/evals"
	"github.com/reprompt/reprompt/examples/internal/agents"
	"github.com/reprompt/reprompt/internal/mockllm"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/providers/openai"
)

// TestTriageEvalMockLLM runs the triage eval against @dwmkerr/mock-llm, an
// OpenAI-compatible mock server from npm, through providers/openai, and
// checks that the figures the eval reports are exactly the ones the
// mistakes scripted into the mock imply.
//
//	eval "$(bash .ci/mockllm.sh)"   # exports REPROMPT_MOCKLLM
//	go test ./examples/structured -run MockLLM -v
//
// Without REPROMPT_MOCKLLM the test skips, unless REPROMPT_MOCKLLM_REQUIRED
// is set (CI sets it), which turns the skip into a failure.
//
// The mock answers from the request's content (its rules' JMESPath
// matches): the first request of a case with a call of read_issue, the
// second, which carries the tool's result, with the triage standIn gives.
// Run n of every case reaches the mock under its own base URL,
// /run-<n>/v1, so a rule can answer one run of one case with a wrong
// priority: the mock needs no state, and the runs may go concurrently.
func TestTriageEvalMockLLM(t *testing.T) {
	// The mistakes: a case's runs answered with a wrong priority.
	mistakes := map[string][]int{
		"token-in-logs":    {0},       // 2 of 3 runs pass
		"slow-replay":      {2},       // 2 of 3
		"retry-regression": {1, 2},    // 1 of 3
		"question-k":       {0, 1, 2}, // none
	}
	// By hand, with n = 3 runs and k = 2: pass@1 = c/n, pass@k =
	// 1 − C(n−c,k)/C(n,k), pass^k = C(c,k)/C(n,k), C(3,2) = 3.
	type figures struct{ passAt1, passAtK, passHatK float64 }
	byPassed := map[int]figures{
		3: {1, 1, 1},
		2: {2.0 / 3, 1, 1.0 / 3}, // C(1,2) = 0; C(2,2) = 1
		1: {1.0 / 3, 2.0 / 3, 0}, // 1 − C(2,2)/3; C(1,2) = 0
		0: {0, 0, 0},
	}
	// Overall, the mean over the 32 cases, 28 of which pass every run:
	// pass@1 (28 + 2·2/3 + 1/3)/32 = 89/96, pass@2 (28 + 2 + 2/3)/32 =
	// 92/96, pass^2 (28 + 2·1/3)/32 = 86/96; 28·3 + 2 + 2 + 1 = 89 runs pass.
	overall := figures{89.0 / 96, 92.0 / 96, 86.0 / 96}

	mock := mockllm.Start(t)
	e := triageEval(t, func(name string, run int) (llm.Model, error) {
		return openai.New(openai.Config{
			APIKey:  "sk-mock",
			BaseURL: fmt.Sprintf("%s/run-%d/v1", mock.URL, run),
			Model:   "gpt-4.1",
			Sleep:   func(ctx context.Context, d time.Duration) error { return ctx.Err() },
		}), nil
	})
	mock.Configure(t, map[string]any{"rules": mockRules(t, e.Cases, mistakes)})

	rep, err := e.Run(t.Context(), nil)
	require.NoError(t, err, "run the eval")
	require.Len(t, rep.Cases, len(e.Cases), "cases reported")
	require.Equal(t, 32, len(rep.Cases), "cases in the dataset, as the figures by hand assume")
	for i, c := range rep.Cases {
		want := e.Cases[i]
		require.Equal(t, want.Name, c.Name, "case %d", i)
		wrong := mistakes[c.Name]
		passed := evalK - len(wrong)
		f, w := c.Figures, byPassed[passed]
		assert.Equal(t, evalK, f.Runs, "%s: runs", c.Name)
		assert.Equal(t, passed, f.Passed, "%s: runs passed", c.Name)
		assert.InDelta(t, w.passAt1, f.PassAt1, 1e-12, "%s: pass@1", c.Name)
		assert.InDelta(t, w.passAtK, f.PassAtK, 1e-12, "%s: pass@2", c.Name)
		assert.InDelta(t, w.passHatK, f.PassHatK, 1e-12, "%s: pass^2", c.Name)
		var failed []int
		for _, r := range c.Runs {
			assert.Equal(t, 2, r.Steps, "%s run %d: steps", c.Name, r.Run)
			assert.Empty(t, r.Error, "%s run %d: error", c.Name, r.Run)
			if r.Pass {
				continue
			}
			failed = append(failed, r.Run)
			if assert.Len(t, r.Failures, 1, "%s run %d: failures", c.Name, r.Run) {
				fl := r.Failures[0]
				assert.Equal(t, "expected", fl.Check, "%s run %d: the failing check", c.Name, r.Run)
				assert.Equal(t, 1, fl.Step, "%s run %d: the failing step", c.Name, r.Run)
				assert.Contains(t, fl.Reason, fmt.Sprintf(`want {"priority":%d}`, want.Expected.Priority), "%s run %d", c.Name, r.Run)
			}
		}
		assert.Equal(t, wrong, failed, "%s: the runs that failed", c.Name)
	}
	o := rep.Overall
	assert.Equal(t, 96, o.Runs, "overall: runs")
	assert.Equal(t, 89, o.Passed, "overall: runs passed")
	assert.InDelta(t, overall.passAt1, o.PassAt1, 1e-12, "overall: pass@1")
	assert.InDelta(t, overall.passAtK, o.PassAtK, 1e-12, "overall: pass@2")
	assert.InDelta(t, overall.passHatK, o.PassHatK, 1e-12, "overall: pass^2")
	assert.Equal(t, evals.Stat{Mean: 2, P95: 2}, o.Steps, "overall: steps")
}

// mockRules returns mock-llm's rules for the cases: for each, a rule that
// calls read_issue and one that answers standIn's triage, on every run's
// path; then, as mock-llm's last matching rule wins, one a mistake that
// answers that run a wrong priority.
func mockRules(t *testing.T, cases []evals.Case[evalIssue, evalWant], mistakes map[string][]int) []mockllm.Rule {
	t.Helper()
	const anyRun = `^/run-[0-9]+/v1/chat/completions$`
	var rules, wrong []mockllm.Rule
	for _, c := range cases {
		user := fmt.Sprintf("Triage issue %d.", c.Input.Number)
		first := fmt.Sprintf(`body.messages[-1].role == 'user' && body.messages[-1].content == '%s'`, user)
		second := fmt.Sprintf(`body.messages[-1].role == 'tool' && contains(body.messages[*].content, '%s')`, user)
		tr := triageOf(c.Input.Text)
		require.Equal(t, c.Expected.Priority, tr.Priority, "case %s: the mock's right answer", c.Name)
		rules = append(rules,
			mockllm.Rule{Path: anyRun, Method: "POST", Match: first, Response: toolCallReply(t, "call_read", "read_issue", agents.IssueArgs{Number: c.Input.Number})},
			mockllm.Rule{Path: anyRun, Method: "POST", Match: second, Response: toolCallReply(t, "call_triage", "triage", tr)},
		)
		runs, ok := mistakes[c.Name]
		if !ok {
			continue
		}
		bad := tr
		bad.Priority = tr.Priority%4 + 1 // another priority, 1 to 4
		for _, run := range runs {
			path := fmt.Sprintf(`^/run-%d/v1/chat/completions$`, run)
			wrong = append(wrong, mockllm.Rule{Path: path, Method: "POST", Match: second, Response: toolCallReply(t, "call_triage", "triage", bad)})
		}
	}
	require.Len(t, wrong, 7, "mistakes scripted")
	return append(rules, wrong...)
}

// toolCallReply is a chat completion calling tool with args, as OpenAI
// sends it.
func toolCallReply(t *testing.T, id, tool string, args any) mockllm.Response {
	t.Helper()
	a, err := json.Marshal(args)
	require.NoError(t, err)
	reply := map[string]any{
		"id": "chatcmpl-{{timestamp}}", "object": "chat.completion", "model": "gpt-4.1",
		"choices": []any{map[string]any{
			"index": 0,
			"message": map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": id, "type": "function", "function": map[string]any{"name": tool, "arguments": string(a)},
			}}},
			"finish_reason": "tool_calls",
		}},
	}
	body, err := json.Marshal(reply)
	require.NoError(t, err)
	return mockllm.Response{Status: http.StatusOK, Content: string(body)}
}
