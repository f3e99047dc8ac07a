package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/effects/builtin"
	"github.com/reprompt/reprompt/examples/longsession/sim"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
)

// targets are the meters the targets hold under and, for each, the most
// the default may bill as a share of the baseline's billed input under the
// same meter, and whether it must bill the least of the strategies with
// recall 1. Issue 24's target is 0.45 under both price models with cache
// writes billed: OpenAI-like at a read of 0.1 and a write of 1 or 1.25,
// and Anthropic-like (0.1, 1.25), where only what the adapter's
// breakpoints cover is read. A cached price of 0.5 is not part of it; its
// bound keeps it from falling back to where it was (0.46–0.52 before the
// committed part and the continued summaries, 0.35–0.36 after).
var targets = []struct {
	meter         meter
	maxOfBaseline float64
	cheapest      bool
}{
	{meter{"openai", 0.1, 1}, 0.45, true},
	{meter{"openai", 0.5, 1}, 0.40, true},
	{meter{"openai", 0.1, 1.25}, 0.45, true},
	{meter{"anthropic", 0.1, 1.25}, 0.45, true},
}

// TestTargets simulates every strategy on seeds 1 to 5 and checks, under
// each meter of targets, the figures the defaults are tuned for: no
// strategy sends a request over what may be sent or breaks pairing; the
// default forgets no tool result unseen (recall 1), bills at most its
// share of the baseline, and where targets say so the least of all the
// strategies with recall 1.
func TestTargets(t *testing.T) {
	var meters []meter
	for _, tg := range targets {
		meters = append(meters, tg.meter)
	}
	for seed := uint64(1); seed <= 5; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			rows, err := run(320, seed, meters)
			require.NoError(t, err)
			checkTargets(t, rows)
		})
	}
}

func checkTargets(t *testing.T, rows []row) {
	t.Helper()
	for _, tg := range targets {
		var def *row
		for i := range rows {
			r := &rows[i]
			if r.meter != tg.meter {
				continue
			}
			t.Log(r)
			assert.Zero(t, r.m.overWindow, "%s: requests over the window", r.name)
			assert.Zero(t, r.m.pairing, "%s: requests with broken pairing", r.name)
			assert.LessOrEqual(t, r.m.bpRead, r.m.prefix, "%s: breakpoints read more than the shared prefix", r.name)
			if r.name == "default" {
				def = r
			}
		}
		require.NotNil(t, def, "no default row under %s", tg.meter)
		assert.Equal(t, 1.0, def.m.recall(), "default under %s: recall", tg.meter)
		assert.LessOrEqual(t, def.billed(), tg.maxOfBaseline*def.baseline,
			"default under %s bills %.3f of the baseline, want at most %.2f", tg.meter, def.billed()/def.baseline, tg.maxOfBaseline)
		for _, r := range rows {
			if tg.cheapest && r.meter == tg.meter && r.name != "default" && r.m.recall() == 1 {
				assert.LessOrEqual(t, def.billed(), r.billed(),
					"under %s the default bills more than %s, which also has recall 1", tg.meter, r.name)
			}
		}
	}
}

// TestRecallCountsForgetting: a strategy that trims every result before
// the model has read it has a recall below 1, and one that keeps them has
// recall 1, so the figure tells them apart.
func TestRecallCountsForgetting(t *testing.T) {
	eager := func(_, _ float64) func(p *prompt.Prompt) {
		trim := builtin.TrimToolResults(builtin.TrimConfig{PreserveRecent: -1, Batch: 1, MinSaving: -1, MaxResultLength: 100})
		return func(p *prompt.Prompt) {
			p.Effect(effects.Always, trim, effects.InPhase(effects.AfterReply), effects.Key("eager"))
		}
	}
	m, err := simulate(eager(0.1, 1), 40, 1, 0.1, "eager")
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
		model := sim.New(120, 3, 0)
		r := runtime.New(model, func(p *prompt.Prompt) error {
			model.Declare(p)
			st.register(0.1, 1)(p)
			return nil
		}, runtime.Config{MaxSteps: 130, Window: window, Reserve: reserve, Counter: sim.Counter})
		for rec, err := range r.All(context.Background()) {
			require.NoError(t, err)
			for _, c := range rec.Reply.Message.ToolCalls {
				names = append(names, c.Name+string(c.Arguments))
			}
		}
		require.NotZero(t, model.Summaries(), "%s: no summary, the test does not test the streams", st.name)
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
	tr := newTracker()
	call := defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: "a", Name: "read_file", Arguments: []byte("{}")}, {ID: "b", Name: "read_file", Arguments: []byte("{}")}}}
	m.record(&runtime.Step{InputTokens: window - reserve, ToolResults: []defs.ToolResult{{CallID: "a", Content: "full a"}, {CallID: "b", Content: "full b"}}}, tr)
	trimmed := &runtime.Step{InputTokens: window - reserve + 1, PrefixTokens: 100}
	trimmed.SetRequest(&llm.Request{Messages: []defs.Message{
		defs.UserMessage("task"), call,
		{Role: defs.RoleTool, ToolCallID: "a", Content: "full a"},
		{Role: defs.RoleTool, ToolCallID: "b", Content: "full…[trimmed]"},
	}})
	m.record(trimmed, tr)
	want := metrics{steps: 2, overWindow: 1, maxInput: window - reserve + 1, input: 2*(window-reserve) + 1, prefix: 100, results: 2, recalled: 1}
	assert.Empty(t, cmp.Diff(want, m, cmp.AllowUnexported(metrics{})), "mismatch (-want +got)")
	assert.Equal(t, map[string]string{"b": "full b"}, tr.unseen)
	assert.Equal(t, 0.5, m.recall())
	assert.InDelta(t, float64(2*(window-reserve)+1-100)+0.5*100, m.billed(meter{"openai", 0.5, 1}), 1e-9)
	m.summaryInput = 1000 // the summaries' input is billed in full
	assert.InDelta(t, float64(2*(window-reserve)+1-100)+0.5*100+1000, m.billed(meter{"openai", 0.5, 1}), 1e-9)
}

// meterConversation returns the meter tests' conversation: a user
// message, then three tool calls, each with its long result.
func meterConversation() (u, a1, t1, a2, t2, a3, t3 defs.Message) {
	return defs.UserMessage("fix the tests"), meterCall("1"), meterResult("1", strings.Repeat("one ", 200)),
		meterCall("2"), meterResult("2", strings.Repeat("two ", 200)), meterCall("3"), meterResult("3", strings.Repeat("three ", 200))
}

// meterCall is the assistant's call id of read_file.
func meterCall(id string) defs.Message {
	return defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: id, Name: "read_file", Arguments: []byte("{}")}}}
}

// meterResult is the result of the call id.
func meterResult(id, content string) defs.Message {
	return defs.Message{Role: defs.RoleTool, ToolCallID: id, Content: content}
}

// meterCount is the tokens of msgs.
func meterCount(msgs ...defs.Message) int {
	n := 0
	for _, m := range msgs {
		n += sim.Counter.Message(m)
	}
	return n
}

// TestAnthropicMeter: an Anthropic-like provider reads the prefix up to the
// last breakpoint the previous request also had (the end of the previous
// request, or after the tools and system prompt once a commit rewrote what
// lies before it) and writes the rest; an OpenAI-like one reads the whole
// shared prefix.
func TestAnthropicMeter(t *testing.T) {
	const fixed = 50 // the tools and system prompt
	u, a1, t1, a2, t2, a3, t3 := meterConversation()
	t1trimmed := meterResult("1", "one [trimmed]")
	tests := []struct {
		msgs           []defs.Message
		prefix, bpRead int // the shared prefix, and what the breakpoints read
	}{
		{[]defs.Message{u}, 0, 0},
		{[]defs.Message{u, a1, t1}, fixed + meterCount(u), fixed + meterCount(u)},
		{[]defs.Message{u, a1, t1, a2, t2}, fixed + meterCount(u, a1, t1), fixed + meterCount(u, a1, t1)},
		// t1 trimmed: the previous request's breakpoint lies past it.
		{[]defs.Message{u, a1, t1trimmed, a2, t2, a3, t3}, fixed + meterCount(u, a1), fixed},
		{[]defs.Message{u, a1, t1trimmed, a2, t2, a3, t3, meterCall("4"), meterResult("4", "four")}, fixed + meterCount(u, a1, t1trimmed, a2, t2, a3, t3), fixed + meterCount(u, a1, t1trimmed, a2, t2, a3, t3)},
	}
	tools := []llm.ToolSpec{{Name: "read_file", Description: "Read a file.", Parameters: []byte(`{"type":"object"}`)}}
	var m metrics
	tr := newTracker()
	for i, tt := range tests {
		rec := &runtime.Step{InputTokens: fixed + meterCount(tt.msgs...), PrefixTokens: tt.prefix}
		rec.SetRequest(&llm.Request{System: "You are a coding agent.", Tools: tools, Messages: tt.msgs})
		before := m.bpRead
		m.record(rec, tr)
		assert.Equal(t, tt.bpRead, m.bpRead-before, "request %d: tokens read by the breakpoints", i)
	}
	openai, anthropic := meter{"openai", 0.1, 1.25}, meter{"anthropic", 0.1, 1.25}
	assert.Less(t, m.bpRead, m.prefix, "the breakpoints read less than the shared prefix after a rewrite")
	assert.InDelta(t, 1.25*float64(m.input-m.prefix)+0.1*float64(m.prefix), m.billed(openai), 1e-9)
	assert.InDelta(t, 1.25*float64(m.input-m.bpRead)+0.1*float64(m.bpRead), m.billed(anthropic), 1e-9)

	// A changed system prompt breaks every breakpoint.
	rec := &runtime.Step{InputTokens: fixed + meterCount(u)}
	rec.SetRequest(&llm.Request{System: "You are a reviewer.", Tools: tools, Messages: tests[len(tests)-1].msgs})
	before := m.bpRead
	m.record(rec, tr)
	assert.Equal(t, 0, m.bpRead-before, "after the system prompt changed: tokens read by the breakpoints")
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
		rows, err := run(320, 1, []meter{{kind: "openai", read: 0.1, write: 1}})
		require.NoError(t, err, "stable-tools=%v", stable)
		require.Len(t, rows, 1, "rows (stable-tools=%v)", stable)
		got[i] = rows[0]
		assert.Zero(t, got[i].m.overWindow, "over_window (stable-tools=%v)", stable)
		assert.Zero(t, got[i].m.pairing, "pairing_errors (stable-tools=%v)", stable)
	}
	assert.Greater(t, got[1].m.reuse(), got[0].m.reuse()+0.03, "prefix_reuse with -stable-tools, above without")
	assert.Less(t, got[1].billed(), got[0].billed(), "billed_input with -stable-tools, below without")
}

// TestAnthropicMeterCommitted: with the committed part the runtime sends
// (llm.Request.Committed, and Repeated where the previous request's
// breakpoint was), the adapter marks the part before the trimmed result,
// and the next request reads it; the meter places the marks where
// providers/anthropic does.
func TestAnthropicMeterCommitted(t *testing.T) {
	const fixed = 50
	u, a1, t1, a2, t2, a3, t3 := meterConversation()
	t1s, t2s := meterResult("1", "one [trimmed]"), meterResult("2", "two [trimmed]")
	tests := []struct {
		msgs                []defs.Message
		committed, repeated int
		marks               []int // the breakpoints, as counts of messages
		bpRead              int
	}{
		{[]defs.Message{u}, 1, 0, []int{0, 1}, 0},
		{[]defs.Message{u, a1, t1}, 2, 1, []int{0, 1, 2, 3}, fixed + meterCount(u)},
		// t1 trimmed: read to the previous request's committed part.
		{[]defs.Message{u, a1, t1s, a2, t2}, 4, 2, []int{0, 2, 4, 5}, fixed + meterCount(u, a1)},
		{[]defs.Message{u, a1, t1s, a2, t2s, a3, t3}, 6, 4, []int{0, 4, 6, 7}, fixed + meterCount(u, a1, t1s, a2)},
		// Nothing rewritten: read the whole previous request.
		{[]defs.Message{u, a1, t1s, a2, t2s, a3, t3, meterCall("4"), meterResult("4", "four")}, 9, 7, []int{0, 7, 9}, fixed + meterCount(u, a1, t1s, a2, t2s, a3, t3)},
	}
	tools := []llm.ToolSpec{{Name: "read_file", Description: "Read a file.", Parameters: []byte(`{"type":"object"}`)}}
	var m metrics
	tr := newTracker()
	for i, tt := range tests {
		req := &llm.Request{System: "You are a coding agent.", Tools: tools, Messages: tt.msgs, Committed: tt.committed, Repeated: tt.repeated}
		assert.Equal(t, tt.marks, breakpoints(req), "request %d: breakpoints", i)
		rec := &runtime.Step{InputTokens: fixed + meterCount(tt.msgs...)}
		rec.SetRequest(req)
		before := m.bpRead
		m.record(rec, tr)
		assert.Equal(t, tt.bpRead, m.bpRead-before, "request %d: tokens read by the breakpoints", i)
	}
}

// TestSummaryReadsTheCache: a summarising call that continues the agent's
// previous request (its tools, system prompt and messages) reads what it
// shares with it under both meters, and pays the rest at the write price;
// one with a system prompt of its own and no tools reads nothing.
func TestSummaryReadsTheCache(t *testing.T) {
	tools := []llm.ToolSpec{{Name: "read_file", Description: "Read a file.", Parameters: []byte(`{"type":"object"}`)}}
	call := defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: "1", Name: "read_file", Arguments: []byte("{}")}}}
	msgs := []defs.Message{defs.UserMessage("fix the tests"), call, {Role: defs.RoleTool, ToolCallID: "1", Content: strings.Repeat("one ", 300)}}
	prev := &llm.Request{System: "You are a coding agent.", Tools: tools, Messages: msgs, Committed: 3}
	cont := &llm.Request{System: prev.System, Tools: tools, Messages: append(slices.Clip(msgs), defs.UserMessage("Summarise.")), Purpose: llm.PurposeSummary, Repeated: 3}
	apart := &llm.Request{System: "You summarise.", Messages: []defs.Message{defs.UserMessage("<conversation>…</conversation>")}, Purpose: llm.PurposeSummary}
	shared := requestTokens(prev)
	for _, tc := range []struct {
		name string
		sum  *llm.Request
		read int
	}{
		{"continued", cont, shared},
		{"apart", apart, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m metrics
			tr := newTracker()
			first := &runtime.Step{InputTokens: requestTokens(prev)}
			first.SetRequest(prev)
			m.record(first, tr)
			next := &runtime.Step{InputTokens: requestTokens(prev), Summaries: []*runtime.Summary{{Request: tc.sum}}}
			next.SetRequest(prev)
			m.record(next, tr)
			in := requestTokens(tc.sum)
			assert.Equal(t, in, m.summaryInput, "summary input")
			assert.Equal(t, tc.read, m.summaryPrefix, "read by the OpenAI-like meter")
			assert.Equal(t, tc.read, m.summaryBpRead, "read by the Anthropic-like meter")
			agent := 1.25*float64(m.input-m.bpRead) + 0.1*float64(m.bpRead)
			assert.InDelta(t, agent+1.25*float64(in-tc.read)+0.1*float64(tc.read), m.billed(meter{"anthropic", 0.1, 1.25}), 1e-9, "billed")
		})
	}
}
