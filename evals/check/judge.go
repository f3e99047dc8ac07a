package check

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
)

// Verdict is a judge's typed answer, declared with prompt.DefOutput and
// read with runtime.Output.
type Verdict struct {
	Score  int    `json:"score" jsonschema:"1 (fails the rubric) to 5 (meets it fully)"`
	Reason string `json:"reason" jsonschema:"why this score, in one or two sentences"`
}

// Grade is a judge's verdict on a run, as the report keeps it.
type Grade struct {
	// Check is the judge's name.
	Check string `json:"check"`
	Verdict
	// Steps, Usage and Cost are the judge's own run's (its cost at its
	// Config.Pricing). An eval counts them in its Budget, not in its
	// figures.
	Steps int       `json:"steps"`
	Usage llm.Usage `json:"usage"`
	Cost  float64   `json:"cost_usd"`
	// Error is the error the judge's run ended with: no verdict.
	Error string `json:"error,omitempty"`
}

// DefaultPassScore is the least score a Judge passes when its PassScore
// is zero.
const DefaultPassScore = 4

// Judge is a check that asks a model to grade a run against a rubric. The
// judge is a prompt like any other: its system prompt holds the rubric, its
// variables the case's input, the expected answer when the case has one,
// and the run's answer or transcript; it ends with a typed Verdict
// (prompt.DefOutput), run with runtime.Run, so that it is recorded and
// replayed like any run (give it Recordings of its own). The run fails the
// check when the score is below PassScore, at the step of its answer.
type Judge struct {
	// Label names the check in reports; "" means "judge".
	Label string
	// Rubric is what the answer is graded against.
	Rubric string
	// Transcript, if set, shows the judge the run's whole transcript (the
	// messages, tool calls and results), not only its answer.
	Transcript bool
	// Model grades every run: it must be safe for concurrent use. Models,
	// if set, gives each run's judgement its own, from the case's name and
	// the run's number (Trajectory.Case and Run), as an evals.ModelFunc
	// does: evals.Recordings gives the judge recordings of its own.
	Model  llm.Model
	Models func(name string, run int) (llm.Model, error)
	// Config configures the judge's runs.
	Config runtime.Config
	// PassScore is the least score that passes; zero means
	// DefaultPassScore.
	PassScore int
}

// Name implements Check: the Label, or "judge".
func (j *Judge) Name() string {
	if j.Label == "" {
		return "judge"
	}
	return j.Label
}

// Check implements Check: it runs the judge on tr.
func (j *Judge) Check(ctx context.Context, tr *Trajectory) error {
	at := answerStep(tr)
	g := Grade{Check: j.Name()}
	defer func() { tr.grades = append(tr.grades, g) }()
	model := j.Model
	if j.Models != nil {
		m, err := j.Models(tr.Case, tr.Run)
		if err != nil {
			g.Error = err.Error()
			return tr.fail(at, "judge: %v", err)
		}
		model = m
	}
	if model == nil {
		g.Error = "no model"
		return tr.fail(at, "judge: no Model or Models")
	}
	res, err := runtime.Run(ctx, model, j.prompt(tr), j.Config)
	if res != nil {
		g.Steps, g.Usage, g.Cost = res.Stats.Steps, res.Usage, res.Stats.Cost
	}
	var v Verdict
	if err == nil {
		v, err = runtime.Output[Verdict](res)
	}
	if err != nil {
		g.Error = err.Error()
		return tr.fail(at, "judge: %v", err)
	}
	g.Verdict = v
	pass := j.PassScore
	if pass == 0 {
		pass = DefaultPassScore
	}
	if v.Score < pass {
		return tr.fail(at, "score %d, below %d: %s", v.Score, pass, v.Reason)
	}
	return nil
}

// prompt is the judge's prompt function for tr.
func (j *Judge) prompt(tr *Trajectory) prompt.Func {
	input := jsonText(tr.Input)
	var expected, answer, transcript string
	if tr.Expected != nil {
		expected = jsonText(tr.Expected)
	}
	if out := tr.Answer(); out != nil {
		answer = string(out)
	} else if tr.Err != nil {
		answer = "(none: the run failed: " + tr.Err.Error() + ")"
	} else {
		answer = "(none)"
	}
	if j.Transcript {
		transcript = transcriptText(tr.Result.Transcript)
	}
	return func(p *prompt.Prompt) error {
		p.DefSystem("role", "You grade the work of an AI agent against a rubric. Be strict and fair; give a score and a short reason.")
		p.DefSystem("rubric", j.Rubric)
		p.Def("input", input)
		if expected != "" {
			p.Def("expected", expected)
		}
		p.Def("answer", answer)
		if transcript != "" {
			p.Def("transcript", transcript)
		}
		prompt.DefOutput[Verdict](p, "verdict", "Your grade of the answer.")
		what := "the answer"
		if transcript != "" {
			what = "the transcript and the answer"
		}
		p.User(fmt.Sprintf("Grade %s against the rubric.", what))
		return nil
	}
}

// transcriptText writes msgs a line or more each, for the judge.
func transcriptText(msgs []defs.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "[%s]", m.Role)
		if m.Name != "" {
			fmt.Fprintf(&b, " %s", m.Name)
		}
		if m.IsError {
			b.WriteString(" (error)")
		}
		if m.Content != "" {
			fmt.Fprintf(&b, " %s", m.Content)
		}
		for _, c := range m.ToolCalls {
			args, _ := json.Marshal(json.RawMessage(c.Arguments))
			fmt.Fprintf(&b, "\n  call %s %s", c.Name, args)
		}
		b.WriteString("\n")
	}
	return b.String()
}
