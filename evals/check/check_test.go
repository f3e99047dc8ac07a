package check_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/evals/check"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type readArgs struct {
	Number int `json:"number"`
}

type labelArgs struct {
	Label string `json:"label"`
	Issue int    `json:"issue"`
}

// labeller reads an issue, labels it (state "labels") and answers in text;
// an effect keyed "count" runs whenever the labels change.
func labeller(p *prompt.Prompt) error {
	labels, setLabels := prompt.State(p, "labels", []string{})
	prompt.DefTool(p, "read_issue", "Read an issue.", func(ctx context.Context, a readArgs) (string, error) {
		if a.Number > 100 {
			return "", errors.New("no such issue")
		}
		return "It crashes.", nil
	})
	prompt.DefTool(p, "label", "Label an issue.", func(ctx context.Context, a labelArgs) (string, error) {
		setLabels.Update(ctx, func(l []string) []string { return append(l, a.Label) })
		return "ok", nil
	})
	p.Effect(effects.On(effects.Named("labels", len(labels))), func(context.Context, *effects.Step) error { return nil }, effects.Key("count"))
	p.User("Label issue 7.")
	return nil
}

// trajectory runs labeller on replies and returns the run for the checks.
func trajectory(t *testing.T, replies ...snapshots.Reply) *check.Trajectory {
	t.Helper()
	res, err := runtime.Run(t.Context(), snapshots.Script(replies...), labeller, runtime.Config{Pricing: llm.Pricing{Input: 1e6, Output: 1e6}})
	return &check.Trajectory{Case: "c", Result: res, Err: err, Pricing: llm.Pricing{Input: 1e6, Output: 1e6}}
}

func TestChecks(t *testing.T) {
	good := trajectory(t,
		snapshots.CallTool("read_issue", readArgs{Number: 7}),
		snapshots.CallTool("label", labelArgs{Label: "bug", Issue: 7}),
		snapshots.Text("Labelled bug."),
	)
	bad := trajectory(t,
		snapshots.CallTool("label", labelArgs{Label: "feature", Issue: 7}),
		snapshots.CallTool("read_issue", readArgs{Number: 700}),
		snapshots.Text("Labelled feature."),
	)
	usage := func(tr *check.Trajectory) int { return tr.Result.Usage.Total() }
	for _, tc := range []struct {
		check   check.Check
		goodErr string // "" passes
		badErr  string
	}{
		{check.OutputEquals("Labelled bug."), "", `step 2: answer "Labelled feature.", want "Labelled bug."`},
		{check.OutputSatisfies("says bug", func(s string) error {
			if s != "Labelled bug." {
				return errors.New("not bug")
			}
			return nil
		}), "", `step 2: answer "Labelled feature.": not bug`},
		{check.Called("label", map[string]any{"label": "bug"}), "", `step 2: label {"label":"bug"} was never called; the calls: label {"label":"feature","issue":7} (step 0), read_issue {"number":700} (step 1)`},
		{check.Called("read_issue", nil), "", ""},
		{check.NotCalled("label", map[string]any{"label": "feature"}), "", `step 0: label called with {"label":"feature","issue":7}`},
		{check.CalledInOrder("read_issue", "label"), "", "step 1: label was not called after read_issue"},
		{check.CalledInOrder("write"), "step 2: write was never called", "step 2: write was never called"},
		{check.EffectRan("count"), "", ""},
		{check.EffectRan("#3"), "step 2: effect #3 never ran", "step 2: effect #3 never ran"},
		{check.StateEquals("labels", []string{"bug"}), "", `step 2: state labels is ["feature"], want ["bug"]`},
		{check.StateEquals("missing", 1), "step 2: state missing is not set", "step 2: state missing is not set"},
		{check.MaxSteps(3), "", ""},
		{check.MaxSteps(2), "step 2: 3 steps, more than 2", "step 2: 3 steps, more than 2"},
		{check.MaxTokens(max(usage(good), usage(bad))), "", ""},
		{check.MaxTokens(10), "step 0: ", "step 0: "},
		{check.MaxCost(float64(max(usage(good), usage(bad)))), "", ""},
		{check.MaxCost(1), "step 0: ", "step 0: "},
		{check.NoToolError(), "", `step 1: read_issue {"number":700} (call_2) failed: error: tool "read_issue" failed: no such issue`},
		{check.ApprovalAsked(""), "step 2: no approval was asked for any tool", "step 2: no approval was asked for any tool"},
	} {
		for _, side := range []struct {
			tr   *check.Trajectory
			want string
		}{{good, tc.goodErr}, {bad, tc.badErr}} {
			err := tc.check.Check(t.Context(), side.tr)
			name := fmt.Sprintf("%s on the %s run", tc.check.Name(), map[bool]string{true: "good", false: "bad"}[side.tr == good])
			if side.want == "" {
				assert.NoError(t, err, name)
				continue
			}
			require.Error(t, err, name)
			assert.Contains(t, err.Error(), side.want, name)
			var f *check.Failure
			assert.ErrorAs(t, err, &f, "%s: a *Failure", name)
		}
	}
}

func TestMatches(t *testing.T) {
	for _, tc := range []struct {
		got  string
		want any
		ok   bool
	}{
		{`{"a": 1, "b": 2}`, map[string]any{"a": 1}, true},
		{`{"a": 1}`, map[string]any{"a": 2}, false},
		{`{"a": {"b": [1, {"c": 3, "d": 4}]}}`, map[string]any{"a": map[string]any{"b": []any{1, map[string]any{"c": 3}}}}, true},
		{`{"a": [1, 2]}`, map[string]any{"a": []int{1}}, false},
		{`{"a": 1}`, nil, true},
		{`not json`, map[string]any{}, false},
		{`"x"`, "x", true},
	} {
		assert.Equal(t, tc.ok, check.Matches([]byte(tc.got), tc.want), "Matches(%s, %v)", tc.got, tc.want)
	}
}
