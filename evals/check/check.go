package check

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// Check judges one run of a case. Checks see the whole trajectory, not only
// the answer: every step's request, reply, tool results, state and effects.
// Implementations must be safe for concurrent use: runs are checked
// concurrently.
type Check interface {
	// Name names the check in reports: "called read_issue", "judge".
	Name() string
	// Check returns nil when the run passes, or why it does not: a
	// *Failure to point at a step (the report then shows that step as a
	// golden file shows it), any other error for the run as a whole,
	// which the report shows with the run's last step.
	Check(ctx context.Context, tr *Trajectory) error
}

// Trajectory is one run of a case, as the checks see it. An eval fills one
// for each run (Reset between two runs); a test of a Check may make its own
// from a runtime.Result. Checks read it and must not change it, but for a
// Judge, which records its Grade in it, nor keep it once they return. Its
// checks are made one at a time (see Apply).
type Trajectory struct {
	// Case is the case's name and Run the run's number, from 0.
	Case string
	Run  int
	// Input is the case's input, and Expected its expected output (nil
	// when it has none), as the Case holds them.
	Input, Expected any
	// Result is what the run returned (runtime.Runner.Run): on error, the
	// steps completed so far. Never nil.
	Result *runtime.Result
	// Err is the error the run ended with; nil if it completed or paused.
	Err error
	// Pricing is the eval's runtime.Config.Pricing, for checks of cost.
	Pricing llm.Pricing
	// NoGolden has Apply leave Failure.Golden empty: the failure still
	// names its step, but that step's text is not made, for an eval whose
	// report keeps none (evals.Eval.Goldens).
	NoGolden bool

	grades  []Grade        // the judges' verdicts, for the report
	goldens map[int]string // golden text by step index: failures at one step share it

	// The tool calls of Result's replies, listed once for every check
	// that reads them (see calls), and the Result they were listed from.
	calls     []call
	callsFrom *runtime.Result
	callsN    int
}

// Grades returns the verdicts of the judges that checked tr, in the order
// they ran. The slice is tr's: callers must not change it.
func (tr *Trajectory) Grades() []Grade { return tr.grades }

// Reset empties tr for another run, keeping the memory it can use again
// (the list of tool calls its checks read): an eval makes one Trajectory
// for all the runs a goroutine checks. What tr returned before (Grades,
// Failures) stays the caller's.
func (tr *Trajectory) Reset() {
	clear(tr.calls) // what the calls point to goes
	*tr = Trajectory{calls: tr.calls[:0]}
}

// Answer returns the run's answer: its last typed answer (JSON), else its
// final text as a JSON string; nil when it has neither.
func (tr *Trajectory) Answer() json.RawMessage {
	for _, s := range slices.Backward(tr.Result.Steps) {
		if s != nil && s.Output != nil {
			return s.Output
		}
	}
	if tr.Result.Text == "" {
		return nil
	}
	b, _ := json.Marshal(tr.Result.Text)
	return b
}

// Steps returns the records of the run's steps (Result.Steps).
func (tr *Trajectory) Steps() []*runtime.Step { return tr.Result.Steps }

// last returns the index of the last step, -1 when there is none.
func (tr *Trajectory) last() int { return len(tr.Result.Steps) - 1 }

// Failure is a check that failed at a step.
type Failure struct {
	// Check is the check's name (set by Apply when empty).
	Check string `json:"check"`
	// Step is the number of the step the failure is about
	// (runtime.Step.Number); -1 for none. A check that returns a *Failure
	// sets it; the report shows the last record of that number.
	Step int `json:"step"`
	// Reason says what was wrong.
	Reason string `json:"reason"`
	// Golden is that step as a golden file shows it (snapshots.Format):
	// its sections, "-- step N/… --" each. Filled in by Apply, unless
	// the Trajectory's NoGolden is set.
	Golden string `json:"golden,omitempty"`

	index int // 1 + the index in the steps, when set by Trajectory.fail
}

// Error returns "step N: reason", or the reason alone without a step.
func (f *Failure) Error() string {
	if f.Step < 0 {
		return f.Reason
	}
	return fmt.Sprintf("step %d: %s", f.Step, f.Reason)
}

// String returns the failure as a report shows it: the check, the step and
// the reason, then the step's golden sections.
func (f *Failure) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n", f.Check, f.Error())
	b.WriteString(f.Golden)
	return b.String()
}

// fail returns a *Failure at the step of index i in tr.Steps (none when
// i is −1).
func (tr *Trajectory) fail(i int, format string, args ...any) *Failure {
	f := &Failure{Step: -1, Reason: fmt.Sprintf(format, args...), index: i + 1}
	if i >= 0 && i < len(tr.Result.Steps) && tr.Result.Steps[i] != nil {
		f.Step = tr.Result.Steps[i].Number
	}
	return f
}

// stepIndex returns the index in steps of the record f is about: the one
// fail chose, or the last record of f.Step; −1 for none.
func (f *Failure) stepIndex(steps []*runtime.Step) int {
	if f.index > 0 {
		return f.index - 1
	}
	for i, s := range slices.Backward(steps) {
		if s != nil && s.Number == f.Step {
			return i
		}
	}
	return -1
}

// golden returns the sections of the step at index i of steps as a golden
// file of the run shows them ("step N/…", and "step N decided/…" for a
// paused step completed later): snapshots.FormatStep, which reads the steps
// before only for what the step repeats of them ("(as in step N)").
func golden(steps []*runtime.Step, i int) string {
	return snapshots.FormatStep(steps, i)
}

// CheckFunc returns a Check named name that calls f.
func CheckFunc(name string, f func(ctx context.Context, tr *Trajectory) error) Check {
	return checkFunc{name, f}
}

type checkFunc struct {
	name string
	f    func(context.Context, *Trajectory) error
}

func (c checkFunc) Name() string                                    { return c.name }
func (c checkFunc) Check(ctx context.Context, tr *Trajectory) error { return c.f(ctx, tr) }

// answerStep returns the index of the step that gave the typed answer, or
// the last step.
func answerStep(tr *Trajectory) int {
	for i, s := range slices.Backward(tr.Result.Steps) {
		if s != nil && s.Output != nil {
			return i
		}
	}
	return tr.last()
}

// outputOf decodes the run's answer as a T: its typed answer
// (runtime.Output), or, when T is string and the run gave none, its text.
func outputOf[T any](tr *Trajectory) (T, error) {
	v, err := runtime.Output[T](tr.Result)
	if err != nil && errors.Is(err, runtime.ErrNoOutput) && tr.Err == nil && len(tr.Result.Awaiting) == 0 {
		if s, ok := any(&v).(*string); ok {
			*s = tr.Result.Text
			return v, nil
		}
	}
	return v, err
}

// OutputEquals checks that the run's answer equals want (reflect.DeepEqual
// on the decoded value: pointers are followed). The answer is the typed
// answer (prompt.DefOutput, runtime.Output[T]), or the final text when T is
// string and the run declared no typed answer. A case's Expected is checked
// this way.
func OutputEquals[T any](want T) Check {
	wantJSON, _ := json.Marshal(want)
	return CheckFunc("output equals", func(_ context.Context, tr *Trajectory) error {
		if i := answerStep(tr); wantJSON != nil && i >= 0 && bytes.Equal(tr.Result.Steps[i].Output, wantJSON) && tr.Err == nil {
			return nil // the answer is want's JSON, byte for byte: no need to decode it
		}
		got, err := outputOf[T](tr)
		if err != nil {
			return tr.fail(answerStep(tr), "no answer: %v", err)
		}
		if !reflect.DeepEqual(want, got) {
			wantText := string(wantJSON) // jsonText(want), marshalled once
			if wantJSON == nil {
				wantText = jsonText(want)
			}
			return tr.fail(answerStep(tr), "answer %s, want %s", jsonText(got), wantText)
		}
		return nil
	})
}

// OutputSatisfies checks that the run's answer (as for OutputEquals) makes
// pred return nil; the check is named name and fails with pred's error.
func OutputSatisfies[T any](name string, pred func(T) error) Check {
	return CheckFunc(name, func(_ context.Context, tr *Trajectory) error {
		got, err := outputOf[T](tr)
		if err != nil {
			return tr.fail(answerStep(tr), "no answer: %v", err)
		}
		if err := pred(got); err != nil {
			return tr.fail(answerStep(tr), "answer %s: %v", jsonText(got), err)
		}
		return nil
	})
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// call is a tool call the model made, with the index of its step.
type call struct {
	step int
	defs.ToolCall
}

// calls returns the tool calls of the run's replies, in order, leaving out
// calls of the answer tool (the typed answer asked for as a tool call).
// Sub-agents' calls are theirs, not the run's: they are not listed.
// The list is made once a trajectory (its checks are made one at a time)
// and shared: callers must not change it.
func calls(tr *Trajectory) []call {
	if tr.callsFrom == tr.Result && tr.callsN == len(tr.Result.Steps) {
		return tr.calls
	}
	out := tr.calls[:0]
	for i, s := range tr.Result.Steps {
		if s == nil || s.Reply == nil || len(s.Decisions) > 0 || len(s.Reply.Message.ToolCalls) == 0 {
			continue // a decided step's reply is its paused record's
		}
		answer := "" // the answer tool's name, when the request asked for one
		if o := s.RequestOutput(); o != nil && o.Mode == llm.OutputTool {
			answer = o.Name
		}
		for _, c := range s.Reply.Message.ToolCalls {
			if answer != "" && c.Name == answer {
				continue
			}
			out = append(out, call{i, c})
		}
	}
	tr.calls, tr.callsFrom, tr.callsN = out, tr.Result, len(tr.Result.Steps)
	return out
}

// Matches reports whether the JSON value got matches the pattern want: an
// object matches when each of want's keys is in got with a matching value
// (got may have more keys), an array when it has as many elements, each
// matching, and any other value when equal (numbers by value). A nil want
// matches anything.
func Matches(got json.RawMessage, want any) bool {
	if want == nil {
		return true
	}
	var g, w any
	if json.Unmarshal(got, &g) != nil {
		return false
	}
	if json.Unmarshal([]byte(jsonText(want)), &w) != nil {
		return false
	}
	return match(g, w)
}

func match(got, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok || !match(gv, wv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !match(g[i], w[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(got, want)
	}
}

func describe(tool string, args any) string {
	if args == nil {
		return tool
	}
	return tool + " " + jsonText(args)
}

// Called checks that the model called tool with arguments matching args
// (see Matches; nil matches any arguments) at some step. Failing, it shows
// the last step and lists the calls the run made.
func Called(tool string, args any) Check {
	return CheckFunc("called "+describe(tool, args), func(_ context.Context, tr *Trajectory) error {
		var made []string
		for _, c := range calls(tr) {
			if c.Name == tool && Matches(c.Arguments, args) {
				return nil
			}
			made = append(made, fmt.Sprintf("%s %s (step %d)", c.Name, c.Arguments, tr.Result.Steps[c.step].Number))
		}
		if len(made) == 0 {
			return tr.fail(tr.last(), "%s was never called: no tool was", describe(tool, args))
		}
		return tr.fail(tr.last(), "%s was never called; the calls: %s", describe(tool, args), strings.Join(made, ", "))
	})
}

// NotCalled checks that the model never called tool with arguments
// matching args (nil: with any arguments). Failing, it shows the step of
// the first such call.
func NotCalled(tool string, args any) Check {
	return CheckFunc("not called "+describe(tool, args), func(_ context.Context, tr *Trajectory) error {
		for _, c := range calls(tr) {
			if c.Name == tool && Matches(c.Arguments, args) {
				return tr.fail(c.step, "%s called with %s", tool, c.Arguments)
			}
		}
		return nil
	})
}

// CalledInOrder checks that the model called the tools named, in this
// order: as a subsequence of its calls, other calls may come between.
// Failing, it shows the step of the last call of the sequence it found
// (the last step when it found none).
func CalledInOrder(tools ...string) Check {
	return CheckFunc("called in order "+strings.Join(tools, ", "), func(_ context.Context, tr *Trajectory) error {
		next, at := 0, tr.last()
		for _, c := range calls(tr) {
			if next < len(tools) && c.Name == tools[next] {
				next, at = next+1, c.step
			}
		}
		if next == len(tools) {
			return nil
		}
		if next == 0 {
			return tr.fail(tr.last(), "%s was never called", tools[0])
		}
		return tr.fail(at, "%s was not called after %s", tools[next], tools[next-1])
	})
}

// EffectRan checks that an effect ran at some step: id is its effects.Ran.ID
// ("#0" for the first unkeyed effect, "key:name" for a keyed one; "name"
// alone matches "key:name").
func EffectRan(id string) Check {
	return CheckFunc("effect "+id+" ran", func(_ context.Context, tr *Trajectory) error {
		for _, s := range tr.Result.Steps {
			for _, e := range s.Effects {
				if e.ID == id || e.ID == "key:"+id {
					return nil
				}
			}
		}
		return tr.fail(tr.last(), "effect %s never ran", id)
	})
}

// StateEquals checks that the state key ended with the value want: the
// state after the last step, compared as JSON (want is encoded, both are
// decoded and compared as Matches does, so that an object may hold more
// keys than want names).
func StateEquals(key string, want any) Check {
	return CheckFunc("state "+key, func(_ context.Context, tr *Trajectory) error {
		i := tr.last()
		if i < 0 {
			return tr.fail(i, "no step ran")
		}
		v, ok := tr.Result.Steps[i].State[key]
		if !ok {
			return tr.fail(i, "state %s is not set", key)
		}
		got := jsonText(v)
		if !Matches(json.RawMessage(got), want) {
			return tr.fail(i, "state %s is %s, want %s", key, got, jsonText(want))
		}
		return nil
	})
}

// MaxSteps checks that the run made at most n model calls; failing, it
// shows step n, the first too many.
func MaxSteps(n int) Check {
	return CheckFunc(fmt.Sprintf("within %d steps", n), func(_ context.Context, tr *Trajectory) error {
		if got := tr.Result.Stats.Steps; got > n {
			// The record of step n's model call: not the index n, as a
			// paused step decided later has two records.
			at := tr.last()
			for i, s := range tr.Result.Steps {
				if s != nil && s.Number >= n && len(s.Decisions) == 0 {
					at = i
					break
				}
			}
			return tr.fail(at, "%d steps, more than %d", got, n)
		}
		return nil
	})
}

// MaxTokens checks that the run's model calls used at most n tokens, input
// and output (llm.Usage.Total); failing, it shows the step that went over.
func MaxTokens(n int) Check {
	return CheckFunc(fmt.Sprintf("within %d tokens", n), func(_ context.Context, tr *Trajectory) error {
		total := 0
		for i, s := range tr.Result.Steps {
			if s.Reply != nil && len(s.Decisions) == 0 {
				total += s.Reply.Usage.Total()
			}
			if total > n {
				return tr.fail(i, "%d tokens by this step, more than %d", total, n)
			}
		}
		return nil
	})
}

// MaxCost checks that the run cost at most usd US dollars, at
// Trajectory.Pricing (an eval's runtime.Config.Pricing); failing, it shows the step that went over.
func MaxCost(usd float64) Check {
	return CheckFunc(fmt.Sprintf("within $%g", usd), func(_ context.Context, tr *Trajectory) error {
		total := 0.0
		for i, s := range tr.Result.Steps {
			if s.Reply != nil && len(s.Decisions) == 0 {
				total += cost(tr.Pricing, s.Reply.Usage)
			}
			if total > usd {
				return tr.fail(i, "$%.6f by this step, more than $%g", total, usd)
			}
		}
		return nil
	})
}

// cost prices u as the runtime does (RunStats.Cost).
func cost(p llm.Pricing, u llm.Usage) float64 { return p.Cost(u) }

// NoToolError checks that no tool call got an error result (a tool that
// failed, invalid arguments, an unknown or disabled tool); failing, it
// shows the step of the first.
func NoToolError() Check {
	return CheckFunc("no tool error", func(_ context.Context, tr *Trajectory) error {
		for i, s := range tr.Result.Steps {
			for _, r := range s.ToolResults {
				if r.IsError {
					return tr.fail(i, "%s %s (%s) failed: %s", r.Name, r.Arguments, r.CallID, firstLine(r.Content))
				}
			}
		}
		return nil
	})
}

// ApprovalAsked checks that the run paused for a person's decision on a
// call of tool (prompt.NeedsApproval, or a question of prompt.Ask); "" means
// any tool.
func ApprovalAsked(tool string) Check {
	name := "approval asked"
	if tool != "" {
		name += " for " + tool
	}
	return CheckFunc(name, func(_ context.Context, tr *Trajectory) error {
		for _, s := range tr.Result.Steps {
			for _, a := range s.Awaiting {
				if tool == "" || a.Tool == tool {
					return nil
				}
			}
		}
		return tr.fail(tr.last(), "no approval was asked for %s", cmp.Or(tool, "any tool"))
	})
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:197] + "..."
	}
	return s
}

// Completed checks that the run ended without an error (Trajectory.Err;
// a paused run passes). Named "run", it is the check an eval makes of
// every run first. Failing, it shows the step the error names
// (runtime.StepError), else the last step, and gives the error as the
// reason.
func Completed() Check {
	return CheckFunc("run", func(_ context.Context, tr *Trajectory) error {
		if tr.Err == nil {
			return nil
		}
		i := tr.last()
		var se *runtime.StepError
		if errors.As(tr.Err, &se) {
			for j, s := range tr.Result.Steps {
				if s != nil && s.Number == se.Step {
					i = j
				}
			}
		}
		return tr.fail(i, "%s", tr.Err.Error())
	})
}

// Apply makes the check c of tr and returns its failure, nil if tr
// passed. The failure is a copy of the *Failure c's error wraps, or, for
// any other error, one at the last step with the error as its reason; its
// Check is c's name unless c set it, and its Golden is filled in (unless
// tr.NoGolden is set). A panic in c is a failure too ("check panicked:
// …", at the last step).
//
// Apply is how an eval makes its checks; it is for tests of a Check as
// well. The checks of one trajectory are applied one at a time: the
// failures at one step share their Golden text.
func Apply(ctx context.Context, c Check, tr *Trajectory) (f *Failure) {
	defer func() {
		if v := recover(); v != nil {
			f = tr.fail(tr.last(), "check panicked: %v", v)
			f.Check = c.Name()
			tr.fillGolden(f)
		}
	}()
	err := c.Check(ctx, tr)
	if err == nil {
		return nil
	}
	return tr.failure(c, err)
}

// failure returns the failure of c's err (see Apply). Apart from Apply, so
// that the variable errors.As fills is made on failures only: a passing
// check allocates nothing.
func (tr *Trajectory) failure(c Check, err error) *Failure {
	var f *Failure
	if errors.As(err, &f) {
		cp := *f
		f = &cp
	} else {
		f = tr.fail(tr.last(), "%s", err.Error())
	}
	if f.Check == "" {
		f.Check = c.Name()
	}
	tr.fillGolden(f)
	return f
}

// fillGolden sets f.Golden, if it is empty, to the sections of its step.
func (tr *Trajectory) fillGolden(f *Failure) {
	if f.Golden != "" || tr.NoGolden {
		return
	}
	i := f.stepIndex(tr.Result.Steps)
	g, ok := tr.goldens[i]
	if !ok {
		g = golden(tr.Result.Steps, i)
		if tr.goldens == nil {
			tr.goldens = map[int]string{}
		}
		tr.goldens[i] = g
	}
	f.Golden = g
}
