package check

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type benchArgs struct {
	Number int `json:"number"`
}

type benchAnswer struct {
	Priority int    `json:"priority" jsonschema:"1 (urgent) to 4"`
	Label    string `json:"label"`
}

// benchSteps is a triage run: a tool call, then a typed answer.
func benchSteps(tb testing.TB) []*runtime.Step {
	fn := func(p *prompt.Prompt) error {
		p.DefSystem("role", "You triage issues.")
		prompt.DefTool(p, "read_issue", "Read an issue by number.", func(ctx context.Context, a benchArgs) (string, error) {
			return fmt.Sprintf("Issue %d: the program crashes.", a.Number), nil
		})
		prompt.DefOutput[benchAnswer](p, "triage", "Your triage.")
		p.User("Triage issue 7.")
		return nil
	}
	res, err := runtime.Run(context.Background(), snapshots.Script(snapshots.CallTool("read_issue", benchArgs{7}), snapshots.Answer(benchAnswer{2, "bug"})), fn, runtime.Config{})
	require.NoError(tb, err)
	require.Len(tb, res.Steps, 2)
	return res.Steps
}

func BenchmarkGolden(b *testing.B) {
	steps := benchSteps(b)
	b.ReportAllocs()
	for b.Loop() {
		golden(steps, 1)
	}
}

// TestGoldenAsFormat checks golden against the sections of the step cut
// from the whole file (snapshots.Format) of the run up to it.
func TestGoldenAsFormat(t *testing.T) {
	steps := benchSteps(t)
	for i, s := range steps {
		var want strings.Builder
		in := false
		for line := range strings.Lines(string(snapshots.Format(steps[:i+1], nil))) {
			if strings.HasPrefix(line, "-- ") && strings.HasSuffix(line, " --\n") {
				in = strings.HasPrefix(line, fmt.Sprintf("-- step %d/", s.Number))
			}
			if in {
				want.WriteString(line)
			}
		}
		require.NotEmpty(t, want.String(), "step %d", i)
		assert.Equal(t, want.String(), golden(steps, i), "golden of step %d", i)
	}
	assert.Empty(t, golden(steps, 5), "golden out of range")
}

// TestApplyNoGolden: with NoGolden, a failure names its step and says
// why, without its step's text; Apply fills it in again without.
func TestApplyNoGolden(t *testing.T) {
	steps := benchSteps(t)
	wrong := OutputEquals(benchAnswer{1, "bug"})
	tr := &Trajectory{Result: &runtime.Result{Steps: steps}, NoGolden: true}
	f := Apply(context.Background(), wrong, tr)
	require.NotNil(t, f, "the wrong answer")
	assert.Equal(t, 1, f.Step, "the step of the answer")
	assert.Contains(t, f.Reason, "want {\"priority\":1", "the reason")
	assert.Empty(t, f.Golden, "no step text with NoGolden")
	panicked := Apply(context.Background(), CheckFunc("boom", func(context.Context, *Trajectory) error { panic("boom") }), tr)
	assert.Empty(t, panicked.Golden, "a panic's failure: no step text either")

	tr.NoGolden = false
	f = Apply(context.Background(), wrong, tr)
	require.NotNil(t, f)
	assert.Equal(t, golden(steps, 1), f.Golden, "the step's text without NoGolden")
}

func BenchmarkGoldenFirst(b *testing.B) {
	steps := benchSteps(b)
	b.ReportAllocs()
	for b.Loop() {
		golden(steps, 0)
	}
}

// BenchmarkApplyPass applies an eval's checks to a passing run.
func BenchmarkApplyPass(b *testing.B) {
	steps := benchSteps(b)
	res := &runtime.Result{Steps: steps, Stats: effects.RunStats{Steps: 2}}
	checks := []Check{Called("read_issue", nil), NoToolError(), MaxSteps(3), CheckFunc("expected", OutputEquals(benchAnswer{2, "bug"}).Check)}
	b.ReportAllocs()
	for b.Loop() {
		tr := &Trajectory{Result: res}
		for _, c := range checks {
			if f := Apply(context.Background(), c, tr); f != nil {
				require.Nil(b, f, "check %s", c.Name())
			}
		}
	}
}

// BenchmarkApplyFail applies an eval's checks to a run whose answer is
// not the one expected: a failure, with its step's golden text.
func BenchmarkApplyFail(b *testing.B) {
	steps := benchSteps(b)
	res := &runtime.Result{Steps: steps, Stats: effects.RunStats{Steps: 2}}
	checks := []Check{Called("read_issue", nil), NoToolError(), MaxSteps(3), CheckFunc("expected", OutputEquals(benchAnswer{1, "bug"}).Check)}
	b.ReportAllocs()
	for b.Loop() {
		tr := &Trajectory{Result: res}
		n := 0
		for _, c := range checks {
			if f := Apply(context.Background(), c, tr); f != nil {
				n++
			}
		}
		if n != 1 {
			require.Equal(b, 1, n, "failures")
		}
	}
}
