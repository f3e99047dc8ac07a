package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/effects/builtin"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
)

// prices are the cached-input prices the targets hold at.
var prices = []float64{0.1, 0.5}

// maxOfBaseline is the most the default may bill, as a share of the
// baseline's billed input, at each price.
var maxOfBaseline = map[float64]float64{0.1: 0.55, 0.5: 0.65}

// TestTargets simulates every strategy on seeds 1 to 5 and checks the
// figures the defaults are tuned for, at cached-input prices of 0.1 and
// 0.5: no strategy sends a request over what may be sent or breaks
// pairing; the default forgets no tool result unseen (recall 1), bills the
// least of all the strategies with recall 1, and at most 0.55 (at 0.1) and
// 0.65 (at 0.5) of the baseline.
func TestTargets(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			rows, err := run(320, seed, prices)
			require.NoError(t, err)
			checkTargets(t, rows)
		})
	}
}

func checkTargets(t *testing.T, rows []row) {
	t.Helper()
	for _, price := range prices {
		var def *row
		for i := range rows {
			r := &rows[i]
			if r.price != price {
				continue
			}
			t.Log(r)
			assert.Zero(t, r.m.overWindow, "%s: requests over the window", r.name)
			assert.Zero(t, r.m.pairing, "%s: requests with broken pairing", r.name)
			if r.name == "default" {
				def = r
			}
		}
		require.NotNil(t, def, "no default row at cached=%g", price)
		assert.Equal(t, 1.0, def.m.recall(), "default at cached=%g: recall", price)
		assert.LessOrEqual(t, def.billed(), maxOfBaseline[price]*def.baseline,
			"default at cached=%g bills %.3f of the baseline, want at most %.2f", price, def.billed()/def.baseline, maxOfBaseline[price])
		for _, r := range rows {
			if r.price == price && r.name != "default" && r.m.recall() == 1 {
				assert.LessOrEqual(t, def.billed(), r.billed(),
					"at cached=%g the default bills more than %s, which also has recall 1", price, r.name)
			}
		}
	}
}

// TestRecallCountsForgetting: a strategy that trims every result before
// the model has read it has a recall below 1, and one that keeps them has
// recall 1, so the figure tells them apart.
func TestRecallCountsForgetting(t *testing.T) {
	eager := func(float64) func(p *prompt.Prompt) {
		trim := builtin.TrimToolResults(builtin.TrimConfig{PreserveRecent: -1, Batch: 1, MinSaving: -1, MaxResultLength: 100})
		return func(p *prompt.Prompt) {
			p.Effect(effects.Always, trim, effects.InPhase(effects.AfterReply), effects.Key("eager"))
		}
	}
	m, err := simulate(eager(0.1), 40, 1, 0.1, "eager")
	require.NoError(t, err)
	require.NotZero(t, m.results)
	assert.Less(t, m.recall(), 0.5, "results trimmed before any request: recall %.3f", m.recall())

	m, err = simulate(func(*prompt.Prompt) {}, 40, 1, 0.1, "none")
	require.NoError(t, err)
	assert.Equal(t, 1.0, m.recall())
}

// TestSeparateStreams: the summaries draw from their own stream, so the
// agent's actions (the tool calls it makes) are the same whatever the
// strategy compacts.
func TestSeparateStreams(t *testing.T) {
	calls := func(st strategy) []string {
		var names []string
		sim := newSim(120, 3)
		r := runtime.New(sim, func(p *prompt.Prompt) error {
			sim.declare(p)
			st.register(0.1)(p)
			return nil
		}, runtime.Config{MaxSteps: 130, Window: window, Reserve: reserve, Counter: sim.counter})
		for rec, err := range r.All(context.Background()) {
			require.NoError(t, err)
			for _, c := range rec.Reply.Message.ToolCalls {
				names = append(names, c.Name+string(c.Arguments))
			}
		}
		require.NotZero(t, sim.summaries, "%s: no summary, the test does not test the streams", st.name)
		return names
	}
	sts := strategies()
	want := calls(sts[0]) // baseline
	for _, st := range sts[1:2] {
		assert.Empty(t, cmp.Diff(want, calls(st)), "%s: the agent's actions differ from the baseline's (-baseline +%s)", st.name, st.name)
	}
}

// TestRecord: over_window counts a request that fits the window but not
// the window minus the output reserve; recall counts a result once it was
// sent in full, and not when only a trimmed form was.
func TestRecord(t *testing.T) {
	var m metrics
	unseen := map[string]string{}
	call := defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: "a", Name: "read_file", Arguments: []byte("{}")}, {ID: "b", Name: "read_file", Arguments: []byte("{}")}}}
	m.record(&runtime.Step{InputTokens: window - reserve, ToolResults: []defs.ToolResult{{CallID: "a", Content: "full a"}, {CallID: "b", Content: "full b"}}}, unseen)
	trimmed := &runtime.Step{InputTokens: window - reserve + 1, PrefixTokens: 100}
	trimmed.SetRequest(&llm.Request{Messages: []defs.Message{
		defs.UserMessage("task"), call,
		{Role: defs.RoleTool, ToolCallID: "a", Content: "full a"},
		{Role: defs.RoleTool, ToolCallID: "b", Content: "full…[trimmed]"},
	}})
	m.record(trimmed, unseen)
	want := metrics{steps: 2, overWindow: 1, maxInput: window - reserve + 1, input: 2*(window-reserve) + 1, prefix: 100, results: 2, recalled: 1}
	assert.Empty(t, cmp.Diff(want, m, cmp.AllowUnexported(metrics{})), "mismatch (-want +got)")
	assert.Equal(t, map[string]string{"b": "full b"}, unseen)
	assert.Equal(t, 0.5, m.recall())
	assert.InDelta(t, float64(2*(window-reserve)+1-100)+0.5*100, m.billed(0.5), 1e-9)
	m.summaryInput = 1000 // the summaries' input is billed in full
	assert.InDelta(t, float64(2*(window-reserve)+1-100)+0.5*100+1000, m.billed(0.5), 1e-9)
}

// TestToggleTool disables grep for 10 steps in every 20 (-toggle-tool 10)
// and checks that keeping it in the tool list (-stable-tools) raises the
// default's prefix reuse and lowers its billed input. It sets the flags'
// variables, so it must not run in parallel.
func TestToggleTool(t *testing.T) {
	defer func(only string, toggle int, stable bool) {
		onlyStrategy, toggleTool, stableTools = only, toggle, stable
	}(onlyStrategy, toggleTool, stableTools)
	onlyStrategy, toggleTool = "default", 10
	var got [2]row
	for i, stable := range []bool{false, true} {
		stableTools = stable
		rows, err := run(320, 1, []float64{0.1})
		require.NoError(t, err, "stable-tools=%v", stable)
		require.Len(t, rows, 1, "rows (stable-tools=%v)", stable)
		got[i] = rows[0]
		assert.Zero(t, got[i].m.overWindow, "over_window (stable-tools=%v)", stable)
		assert.Zero(t, got[i].m.pairing, "pairing_errors (stable-tools=%v)", stable)
	}
	assert.Greater(t, got[1].m.reuse(), got[0].m.reuse()+0.03, "prefix_reuse with -stable-tools, above without")
	assert.Less(t, got[1].billed(), got[0].billed(), "billed_input with -stable-tools, below without")
}
