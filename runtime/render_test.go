package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// Section 5: rendering a request.

// firstRequest runs fn for one step and returns the request it sent.
func firstRequest(t *testing.T, fn prompt.Func) *llm.Request {
	t.Helper()
	m := snapshots.Script(snapshots.Text("ok"))
	run(t, m, fn, runtime.Config{})
	return m.Requests()[0]
}

type server struct {
	Host  string   `json:"host"`
	Ports []int    `json:"ports"`
	Tags  []string `json:"tags,omitempty"`
}

func TestRenderSystemPrompt(t *testing.T) {
	tests := []struct {
		name string
		fn   func(p *prompt.Prompt)
		want string
	}{
		{"nothing declared", func(*prompt.Prompt) {}, ""},
		{"everything disabled", func(p *prompt.Prompt) {
			p.DefSystem("role", "r").Disable()
			p.Def("v", "1").Disable()
		}, ""},
		{"system parts in declaration order, trailing newlines trimmed", func(p *prompt.Prompt) {
			p.DefSystem("role", "You help.\n\n")
			p.DefSystem("rules", "One.\nTwo.")
		}, "<role>\nYou help.\n</role>\n\n<rules>\nOne.\nTwo.\n</rules>"},
		{"variables after the system parts whatever the declaration order", func(p *prompt.Prompt) {
			p.Def("user", "Ada")
			p.DefSystem("role", "You help.")
			p.Def("city", "Paris")
		}, "<role>\nYou help.\n</role>\n\n<variables>\n<user>Ada</user>\n<city>Paris</city>\n</variables>"},
		{"only variables", func(p *prompt.Prompt) {
			p.Def("a", "1")
		}, "<variables>\n<a>1</a>\n</variables>"},
		{"multi-line variable", func(p *prompt.Prompt) {
			p.Def("notes", "line 1\nline 2")
		}, "<variables>\n<notes>\nline 1\nline 2\n</notes>\n</variables>"},
		{"DefData as YAML", func(p *prompt.Prompt) {
			p.DefData("config", map[string]any{"retries": 3, "mode": "fast", "weights": []float64{0.5, 1}})
			p.DefData("server", server{Host: "db", Ports: []int{5432}})
			p.DefData("limit", 10)
			p.DefData("label", "plain")
		}, "<variables>\n" +
			"<config>\nmode: fast\nretries: 3\nweights:\n    - 0.5\n    - 1\n</config>\n" +
			"<server>\nhost: db\nports:\n    - 5432\n</server>\n" +
			"<limit>10</limit>\n" +
			"<label>plain</label>\n" +
			"</variables>"},
		{"disabled parts and variables are left out", func(p *prompt.Prompt) {
			p.DefSystem("a", "A")
			p.DefSystem("b", "B").Disable()
			p.Def("x", "1").Disable()
			p.Def("y", "2")
		}, "<a>\nA\n</a>\n\n<variables>\n<y>2</y>\n</variables>"},
		{"a replaced value keeps its position", func(p *prompt.Prompt) {
			p.Def("a", "1")
			p.Def("b", "2")
			p.Def("a", "3")
		}, "<variables>\n<a>3</a>\n<b>2</b>\n</variables>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := firstRequest(t, func(p *prompt.Prompt) error { tt.fn(p); p.User("hi"); return nil })
			assert.Empty(t, cmp.Diff(tt.want, req.System), "system prompt mismatch (-want +got)")
		})
	}
}

func TestRenderToolList(t *testing.T) {
	req := firstRequest(t, func(p *prompt.Prompt) error {
		prompt.DefTool(p, "b_second", "Second.", func(context.Context, amountArgs) (string, error) { return "", nil })
		prompt.DefTool(p, "a_first", "First.", func(context.Context, noArgs) (string, error) { return "", nil })
		p.DefAgent("helper", "Helps.", func(*prompt.Prompt) error { return nil })
		p.User("hi")
		return nil
	})
	assert.Empty(t, cmp.Diff([]string{"b_second", "a_first", "helper"}, toolNames(req)), "tool order mismatch (-want +got)")
	var schema struct {
		Type       string                       `json:"type"`
		Required   []string                     `json:"required"`
		Properties map[string]map[string]string `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(req.Tools[0].Parameters, &schema))
	assert.Equal(t, "object", schema.Type, "schema of b_second: type")
	assert.Empty(t, cmp.Diff([]string{"n"}, schema.Required), "schema of b_second: required mismatch (-want +got)")
	assert.Equal(t, "integer", schema.Properties["n"]["type"], "schema of b_second: n's type")
	assert.Equal(t, "how much to add", schema.Properties["n"]["description"], "schema of b_second: n's description")
	assert.Equal(t, "Second.", req.Tools[0].Description, "description of b_second")
	assert.Contains(t, string(req.Tools[2].Parameters), `"task"`, "sub-agent schema, want a task argument")
}

func TestRenderErrorNamesVariable(t *testing.T) {
	m := snapshots.Script(snapshots.Text("unreached"))
	_, err := runtime.Run(context.Background(), m, func(p *prompt.Prompt) error {
		p.DefData("callback", map[string]any{"f": func() {}})
		p.User("hi")
		return nil
	}, runtime.Config{})
	var se *runtime.StepError
	var ue *json.UnsupportedTypeError
	require.ErrorAs(t, err, &se, "Run")
	require.Equal(t, runtime.OpRender, se.Op, "StepError.Op")
	require.Equal(t, 0, se.Step, "StepError.Step")
	require.ErrorAs(t, err, &ue, "Run, want the *json.UnsupportedTypeError wrapped")
	// The variable's name is in no field: the message is the contract here.
	assert.Contains(t, err.Error(), `"callback"`, "the error does not name the variable")
	assert.Empty(t, m.Requests(), "a request that failed to render was sent")
}

// assertPrefixes checks that the messages of each request start with the
// exact messages of the previous one, except at the steps listed in breaks.
func assertPrefixes(t *testing.T, reqs []*llm.Request, breaks ...int) {
	t.Helper()
	for k := 1; k < len(reqs); k++ {
		prev, cur := reqs[k-1].Messages, reqs[k].Messages
		broke := len(cur) < len(prev) || !cmp.Equal(prev, cur[:len(prev)])
		if !assert.Equal(t, !contains(breaks, k), !broke, "request %d extends request %d\nprev: %q\ncur:  %q", k, k-1, transcriptOf(prev), transcriptOf(cur)) {
			continue
		}
		if !broke {
			a, _ := json.Marshal(prev)
			b, _ := json.Marshal(cur[:len(prev)])
			assert.Equal(t, string(a), string(b), "request %d: prefix bytes differ from request %d", k, k-1)
		}
	}
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func TestPromptCacheDiscipline(t *testing.T) {
	fn := func(p *prompt.Prompt) error {
		p.DefSystem("role", "You work.")
		p.DefSystem("rules", "Be exact.")
		p.Def("user", "Ada")
		p.DefData("config", map[string]any{"z": 1, "a": []string{"x", "y"}, "m": map[string]int{"k": 2, "b": 1}})
		prompt.DefTool(p, "work", "Work.", func(_ context.Context, a amountArgs) (string, error) { return fmt.Sprint(a.N), nil })
		prompt.DefTool(p, "rest", "Rest.", func(context.Context, noArgs) (string, error) { return "rested", nil })
		p.User("Do the job.")
		// State that changes at every step but that nothing rendered depends on.
		_, set := prompt.State(p, "calls", 0)
		p.Effect(effects.Always, func(ctx context.Context, _ *effects.Step) error {
			set.Update(ctx, func(n int) int { return n + 1 })
			return nil
		})
		return nil
	}
	m := snapshots.Script(
		snapshots.CallTool("work", amountArgs{N: 1}),
		snapshots.CallTools(snapshots.Call{Name: "work", Args: amountArgs{N: 2}}, snapshots.Call{Name: "rest"}),
		snapshots.CallTool("work", amountArgs{N: 3}),
		snapshots.Text("done"),
	)
	run(t, m, fn, runtime.Config{})
	reqs := m.Requests()
	for k := 1; k < len(reqs); k++ {
		assert.Equal(t, reqs[0].System, reqs[k].System, "system prompt of request %d differs from request 0", k)
		assert.Empty(t, cmp.Diff(reqs[0].Tools, reqs[k].Tools), "tools of request %d differ (-req0 +req%d)", k, k)
	}
	assertPrefixes(t, reqs)
}

func TestVolatileViewStaysAtTheTail(t *testing.T) {
	fn := func(p *prompt.Prompt) error {
		p.DefSystem("role", "You work.")
		prompt.DefTool(p, "work", "Work.", func(context.Context, noArgs) (string, error) { return "done", nil })
		p.User("Go.")
		p.Effect(effects.Always, func(_ context.Context, s *effects.Step) error {
			s.AppendMessages(defs.UserMessage(fmt.Sprintf("(step %d, %d messages so far)", s.Number, len(s.Transcript()))))
			return nil
		})
		return nil
	}
	m := snapshots.Script(snapshots.CallTool("work", nil), snapshots.CallTool("work", nil), snapshots.Text("ok"))
	res := run(t, m, fn, runtime.Config{})
	reqs := m.Requests()
	// Without its volatile tail, each request is a prefix of the next.
	stripped := make([]*llm.Request, len(reqs))
	for i, r := range reqs {
		last := r.Messages[len(r.Messages)-1]
		assert.Equal(t, fmt.Sprintf("(step %d, %d messages so far)", i, 1+2*i), last.Content, "request %d tail", i)
		stripped[i] = &llm.Request{Messages: r.Messages[:len(r.Messages)-1]}
	}
	assertPrefixes(t, stripped)
	for _, msg := range res.Transcript {
		assert.False(t, strings.HasPrefix(msg.Content, "(step"), "a view reached the transcript: %q", msg.Content)
	}
}

func TestCommitBreaksPrefixOnce(t *testing.T) {
	fn := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "work", "Work.", func(context.Context, noArgs) (string, error) { return strings.Repeat("data ", 20), nil })
		p.User("Go.")
		// Compaction: at step 2, trim the old tool results, committed once.
		p.Effect(effects.Always, func(_ context.Context, s *effects.Step) error {
			if s.Number != 2 {
				return nil
			}
			tr := append([]defs.Message(nil), s.Transcript()...)
			for i := range tr {
				if tr[i].Role == defs.RoleTool {
					tr[i].Content = "[trimmed]"
					tr[i].Meta = map[string]string{"trimmed": "true"}
				}
			}
			s.CommitMessages(tr)
			return nil
		})
		return nil
	}
	replies := make([]snapshots.Reply, 0, 6)
	for range 5 {
		replies = append(replies, snapshots.CallTool("work", nil))
	}
	m := snapshots.Script(append(replies, snapshots.Text("ok"))...)
	res := run(t, m, fn, runtime.Config{})
	reqs := m.Requests()
	assertPrefixes(t, reqs, 2)
	var committed []bool
	for _, s := range res.Steps {
		committed = append(committed, s.Committed)
	}
	assert.Empty(t, cmp.Diff([]bool{false, false, true, false, false, false}, committed), "Committed per step mismatch (-want +got)")
	want3 := []string{
		"user: Go.",
		"assistant:  {call_1 work {}}", "tool[call_1 work]: [trimmed]",
		"assistant:  {call_2 work {}}", "tool[call_2 work]: [trimmed]",
		"assistant:  {call_3 work {}}", "tool[call_3 work]: " + strings.Repeat("data ", 20),
	}
	assert.Empty(t, cmp.Diff(want3, transcriptOf(reqs[3].Messages)), "request 3 mismatch (-want +got)")
}

// Section 6: step modifications.

func TestStepModifications(t *testing.T) {
	type request struct {
		System   string
		Messages []string
		Tools    []string
	}
	base := func(p *prompt.Prompt) {
		p.DefSystem("role", "R")
		p.DefSystem("rules", "U")
		p.Def("a", "1")
		p.Def("b", "2")
		prompt.DefTool(p, "read", "Read.", func(context.Context, noArgs) (string, error) { return "r", nil })
		prompt.DefTool(p, "write", "Write.", func(context.Context, noArgs) (string, error) { return "w", nil })
		p.User("go")
	}
	const fullSystem = "<role>\nR\n</role>\n\n<rules>\nU\n</rules>\n\n<variables>\n<a>1</a>\n<b>2</b>\n</variables>"
	step0 := request{fullSystem, []string{"user: go"}, []string{"read", "write"}}
	step1 := request{fullSystem, []string{"user: go", "assistant:  {call_1 read {}}", "tool[call_1 read]: r"}, []string{"read", "write"}}
	step2 := request{fullSystem, append(step1.Messages, "assistant:  {call_2 read {}}", "tool[call_2 read]: r"), []string{"read", "write"}}
	// step2Refused is step 2 when read was left out of step 1's tools: the
	// model called it anyway and got an error result.
	step2Refused := request{fullSystem, append(step1.Messages[:3:3], "assistant:  {call_2 read {}}",
		`tool[call_2 read]!: error: tool "read" is disabled at this step and was not run`), []string{"read", "write"}}

	tests := []struct {
		name      string
		modify    func(s *effects.Step) // applied at step 1 only
		want      []request
		committed bool
	}{
		{"no modification", func(*effects.Step) {}, []request{step0, step1, step2}, false},
		{"AppendMessages is a view", func(s *effects.Step) {
			s.AppendMessages(defs.UserMessage("extra 1"), defs.UserMessage("extra 2"))
		}, []request{step0, {fullSystem, append(step1.Messages[:3:3], "user: extra 1", "user: extra 2"), step1.Tools}, step2}, false},
		{"ReplaceMessages is a view", func(s *effects.Step) {
			s.ReplaceMessages([]defs.Message{defs.UserMessage("replaced")})
		}, []request{step0, {fullSystem, []string{"user: replaced"}, step1.Tools}, step2}, false},
		{"CommitMessages reaches later steps", func(s *effects.Step) {
			s.CommitMessages([]defs.Message{defs.UserMessage("summary: read once")})
		}, []request{step0,
			{fullSystem, []string{"user: summary: read once"}, step1.Tools},
			{fullSystem, []string{"user: summary: read once", "assistant:  {call_2 read {}}", "tool[call_2 read]: r"}, step1.Tools},
		}, true},
		{"append, commit, append: appended messages follow the new transcript", func(s *effects.Step) {
			s.AppendMessages(defs.UserMessage("appended before"))
			s.CommitMessages(s.Transcript()[:1])
			s.AppendMessages(defs.UserMessage("appended after"))
		}, []request{step0,
			{fullSystem, []string{"user: go", "user: appended before", "user: appended after"}, step1.Tools},
			{fullSystem, []string{"user: go", "assistant:  {call_2 read {}}", "tool[call_2 read]: r"}, step1.Tools},
		}, true},
		{"replace then commit: the commit drops the replacement", func(s *effects.Step) {
			s.ReplaceMessages([]defs.Message{defs.UserMessage("dropped")})
			s.CommitMessages(s.Transcript()[:1])
			s.AppendMessages(defs.UserMessage("kept for this step"))
		}, []request{step0,
			{fullSystem, []string{"user: go", "user: kept for this step"}, step1.Tools},
			{fullSystem, []string{"user: go", "assistant:  {call_2 read {}}", "tool[call_2 read]: r"}, step1.Tools},
		}, true},
		{"LimitTools only filters", func(s *effects.Step) {
			s.LimitTools("write", "ghost")
		}, []request{step0, {fullSystem, step1.Messages, []string{"write"}}, step2Refused}, false},
		{"LimitTools twice intersects", func(s *effects.Step) {
			s.LimitTools("read", "write")
			s.LimitTools("read", "ghost")
		}, []request{step0, {fullSystem, step1.Messages, []string{"read"}}, step2}, false},
		{"LimitTools with no names offers no tool", func(s *effects.Step) {
			s.LimitTools()
		}, []request{step0, {fullSystem, step1.Messages, nil}, step2Refused}, false},
		{"LimitSystems only filters", func(s *effects.Step) {
			s.LimitSystems("rules", "ghost")
		}, []request{step0, {"<rules>\nU\n</rules>\n\n<variables>\n<a>1</a>\n<b>2</b>\n</variables>", step1.Messages, step1.Tools}, step2}, false},
		{"SetVariable overrides in place and adds at the end", func(s *effects.Step) {
			s.SetVariable("new", map[string]int{"k": 1})
			s.SetVariable("a", "one")
			s.SetVariable("tail", "t")
		}, []request{step0, {"<role>\nR\n</role>\n\n<rules>\nU\n</rules>\n\n<variables>\n<a>one</a>\n<b>2</b>\n<new>k: 1</new>\n<tail>t</tail>\n</variables>", step1.Messages, step1.Tools}, step2}, false},
		{"SetVariable of a disabled variable does not enable it", func(s *effects.Step) {
			if h, ok := s.Variables.Handle("b"); ok {
				h.Disable()
			}
			s.SetVariable("b", "forced")
		}, []request{step0, {"<role>\nR\n</role>\n\n<rules>\nU\n</rules>\n\n<variables>\n<a>1</a>\n</variables>", step1.Messages, step1.Tools}, step2}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fn := func(p *prompt.Prompt) error {
				base(p)
				p.Effect(effects.Always, func(_ context.Context, s *effects.Step) error {
					if s.Number == 1 {
						tt.modify(s)
					}
					return nil
				})
				return nil
			}
			m := snapshots.Script(snapshots.CallTool("read", nil), snapshots.CallTool("read", nil), snapshots.Text("ok"))
			res := run(t, m, fn, runtime.Config{})
			var got []request
			for _, r := range m.Requests() {
				got = append(got, request{r.System, transcriptOf(r.Messages), toolNames(r)})
			}
			assert.Empty(t, cmp.Diff(tt.want, got), "requests mismatch (-want +got)")
			assert.Equal(t, tt.committed, res.Steps[1].Committed, "step 1 Committed")
		})
	}
}

func TestToolLeftOutByLimitToolsIsNotRun(t *testing.T) {
	var writes int
	fn := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "read", "Read.", func(context.Context, noArgs) (string, error) { return "r", nil })
		prompt.DefTool(p, "write", "Write.", func(context.Context, noArgs) (string, error) { writes++; return "w", nil })
		p.User("go")
		p.Effect(effects.Always, func(_ context.Context, s *effects.Step) error { s.LimitTools("read"); return nil })
		return nil
	}
	m := snapshots.Script(snapshots.CallTool("write", nil), snapshots.Text("ok"))
	res := run(t, m, fn, runtime.Config{})
	r := res.Steps[0].ToolResults[0]
	assert.True(t, r.IsError, "result %+v: IsError", r)
	assert.Contains(t, r.Content, `"write" is disabled`, "result of the disabled tool")
	assert.Equal(t, 0, writes, "writes")
}

func TestBrokenViewIsNotSent(t *testing.T) {
	fn := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "read", "Read.", func(context.Context, noArgs) (string, error) { return "r", nil })
		p.User("go")
		p.Effect(effects.Always, func(_ context.Context, s *effects.Step) error {
			if s.Number == 1 {
				msgs := s.Messages()
				s.ReplaceMessages([]defs.Message{msgs[0], msgs[2]}) // keeps the result, drops its call
			}
			return nil
		})
		return nil
	}
	m := snapshots.Script(snapshots.CallTool("read", nil), snapshots.Text("unreached"))
	_, err := runtime.Run(context.Background(), m, fn, runtime.Config{})
	var se *runtime.StepError
	var re *llm.RequestError
	require.ErrorAs(t, err, &se, "Run")
	require.ErrorAs(t, err, &re, "Run, want the *llm.RequestError wrapped")
	assert.Equal(t, "validate", se.Op, "StepError.Op")
	assert.Equal(t, 1, se.Step, "StepError.Step")
	assert.Equal(t, 1, re.Index, "RequestError.Index")
	assert.Len(t, m.Requests(), 1, "requests: the broken one was sent")
}

func TestDeclarationOrderAcrossStepsKeepsPositions(t *testing.T) {
	fn := func(p *prompt.Prompt) error {
		if p.Step()%2 == 0 {
			p.DefSystem("a", "A")
			p.DefSystem("b", "B")
			p.Def("x", "1")
			p.Def("y", "2")
			prompt.DefTool(p, "t1", "d", func(context.Context, noArgs) (string, error) { return "", nil })
			prompt.DefTool(p, "t2", "d", func(context.Context, noArgs) (string, error) { return "", nil })
		} else { // the same definitions, declared in reverse order
			prompt.DefTool(p, "t2", "d", func(context.Context, noArgs) (string, error) { return "", nil })
			prompt.DefTool(p, "t1", "d", func(context.Context, noArgs) (string, error) { return "", nil })
			p.Def("y", "2")
			p.Def("x", "1")
			p.DefSystem("b", "B")
			p.DefSystem("a", "A")
		}
		p.User("go")
		return nil
	}
	m := snapshots.Script(snapshots.CallTool("t1", nil), snapshots.CallTool("t2", nil), snapshots.Text("ok"))
	run(t, m, fn, runtime.Config{})
	const want = "<a>\nA\n</a>\n\n<b>\nB\n</b>\n\n<variables>\n<x>1</x>\n<y>2</y>\n</variables>"
	for i, r := range m.Requests() {
		assert.Equal(t, want, r.System, "request %d system", i)
		assert.Empty(t, cmp.Diff([]string{"t1", "t2"}, toolNames(r)), "request %d tools mismatch (-want +got)", i)
	}
	assertPrefixes(t, m.Requests())
}
