package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/snapshots"
	"github.com/reprompt/reprompt/state"
)

// Section 4: definitions, tools, sub-agents.

func TestDisabledToolIsAbsentAndNotRun(t *testing.T) {
	tests := []struct {
		name    string
		disable func(p *prompt.Prompt, h defs.Handle)
	}{
		{"from the prompt function", func(p *prompt.Prompt, h defs.Handle) {
			if p.Step() == 0 {
				h.Disable()
			}
		}},
		{"from an effect through its handle", func(p *prompt.Prompt, h defs.Handle) {
			p.Effect(effects.Always, func(_ context.Context, s *effects.Step) error {
				if s.Number == 0 {
					h.Disable()
				}
				return nil
			})
		}},
		{"from an effect through the collection", func(p *prompt.Prompt, _ defs.Handle) {
			p.Effect(effects.Always, func(_ context.Context, s *effects.Step) error {
				if h, ok := s.Tools.Handle("delete"); ok && s.Number == 0 {
					h.Disable()
				}
				return nil
			})
		}},
		{"by LimitTools", func(p *prompt.Prompt, _ defs.Handle) {
			p.Effect(effects.Always, func(_ context.Context, s *effects.Step) error {
				if s.Number == 0 {
					s.LimitTools("read")
				}
				return nil
			})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var deletes atomic.Int32
			fn := func(p *prompt.Prompt) error {
				prompt.DefTool(p, "read", "Read.", func(context.Context, noArgs) (string, error) { return "read", nil })
				h := prompt.DefTool(p, "delete", "Delete.", func(context.Context, noArgs) (string, error) {
					deletes.Add(1)
					return "deleted", nil
				})
				tt.disable(p, h)
				p.User("go")
				return nil
			}
			m := snapshots.Script(
				snapshots.CallTool("delete", nil), // called anyway at step 0
				snapshots.CallTool("delete", nil), // enabled again at step 1
				snapshots.Text("done"),
			)
			res := run(t, m, fn, runtime.Config{})
			reqs := m.Requests()
			assert.Empty(t, cmp.Diff([]string{"read"}, toolNames(reqs[0])), "step 0 tools mismatch (-want +got)")
			assert.Empty(t, cmp.Diff([]string{"read", "delete"}, toolNames(reqs[1])), "step 1 tools mismatch (-want +got)")
			r0 := res.Steps[0].ToolResults[0]
			want0 := defs.ToolResult{CallID: "call_1", Name: "delete", Arguments: []byte("{}"),
				Content: `error: tool "delete" is disabled at this step and was not run`, IsError: true}
			assert.Empty(t, cmp.Diff(want0, r0), "step 0 result mismatch (-want +got)")
			// Step 1: the tool runs.
			r1 := res.Steps[1].ToolResults[0]
			assert.False(t, r1.IsError, "step 1 result: IsError")
			assert.Equal(t, "deleted", r1.Content, "step 1 result")
			assert.Equal(t, int32(1), deletes.Load(), "runs of delete, want one (only when enabled)")
			// The model sees the error result.
			assert.Empty(t, cmp.Diff("tool[call_1 delete]!: "+want0.Content, transcriptOf(reqs[1].Messages)[2]), "error result in the next request mismatch (-want +got)")
		})
	}
}

func TestDisabledRecordedInStep(t *testing.T) {
	fn := func(p *prompt.Prompt) error {
		p.DefSystem("a", "A").Disable()
		p.Def("v", "1").Disable()
		prompt.DefTool(p, "t", "T", func(context.Context, noArgs) (string, error) { return "", nil }).Disable()
		p.User("go")
		return nil
	}
	m := snapshots.Script(snapshots.Text("ok"))
	res := run(t, m, fn, runtime.Config{})
	want := []defs.Ref{{Kind: defs.KindSystem, Name: "a"}, {Kind: defs.KindVariable, Name: "v"}, {Kind: defs.KindTool, Name: "t"}}
	assert.Empty(t, cmp.Diff(want, res.Steps[0].Disabled), "Disabled mismatch (-want +got)")
	req := m.Requests()[0]
	assert.Empty(t, req.System, "system of the request with everything disabled")
	assert.Empty(t, req.Tools, "tools of the request with everything disabled")
}

const wantReminder = "<reminder>\nKeep these in mind for your next action:\n- <rules> (system)\n- <lookup> (tool)\n</reminder>"

func TestReminderIsTrailingUserMessage(t *testing.T) {
	tests := []struct {
		name   string
		effect func(s *effects.Step)
		want1  []string // messages of the request at step 1
	}{
		{"no change to messages", func(*effects.Step) {}, []string{
			"user: go", "assistant:  {call_1 lookup {}}", "tool[call_1 lookup]: found", "user: " + wantReminder,
		}},
		{"after AppendMessages", func(s *effects.Step) { s.AppendMessages(defs.UserMessage("volatile")) }, []string{
			"user: go", "assistant:  {call_1 lookup {}}", "tool[call_1 lookup]: found", "user: volatile", "user: " + wantReminder,
		}},
		{"after ReplaceMessages", func(s *effects.Step) { s.ReplaceMessages(s.Messages()[:1]) }, []string{
			"user: go", "user: " + wantReminder,
		}},
		{"after CommitMessages", func(s *effects.Step) {
			s.CommitMessages(append([]defs.Message{defs.UserMessage("summary")}, s.Transcript()[1:]...))
		}, []string{
			"user: summary", "assistant:  {call_1 lookup {}}", "tool[call_1 lookup]: found", "user: " + wantReminder,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fn := func(p *prompt.Prompt) error {
				rules := p.DefSystem("rules", "Be careful.")
				lookup := prompt.DefTool(p, "lookup", "Look up.", func(context.Context, noArgs) (string, error) { return "found", nil })
				p.User("go")
				p.Effect(effects.Always, func(_ context.Context, s *effects.Step) error {
					if s.Number == 1 {
						rules.Remind()
						tt.effect(s)
						lookup.Remind()
						rules.Remind() // named once
					}
					return nil
				})
				return nil
			}
			m := snapshots.Script(snapshots.CallTool("lookup", nil), snapshots.CallTool("lookup", nil), snapshots.Text("done"))
			res := run(t, m, fn, runtime.Config{})
			reqs := m.Requests()
			assert.Empty(t, cmp.Diff(tt.want1, transcriptOf(reqs[1].Messages)), "step 1 request mismatch (-want +got)")
			last := reqs[1].Messages[len(reqs[1].Messages)-1]
			// The reminder: a user message marked as reminder.
			assert.Equal(t, defs.RoleUser, last.Role, "reminder message: Role")
			assert.Equal(t, "true", last.Meta["reminder"], "reminder message: Meta[reminder]")
			// For this step only: not in the transcript, not in the next request.
			for i, r := range []*llm.Request{reqs[0], reqs[2]} {
				for _, msg := range r.Messages {
					assert.NotContains(t, msg.Content, "<reminder>", "request %d carries a reminder", 2*i)
				}
			}
			for _, msg := range res.Transcript {
				assert.NotContains(t, msg.Content, "<reminder>", "the reminder reached the transcript")
			}
			want := []defs.Ref{{Kind: defs.KindSystem, Name: "rules"}, {Kind: defs.KindTool, Name: "lookup"}}
			assert.Empty(t, cmp.Diff(want, res.Steps[1].Reminded), "Reminded mismatch (-want +got)")
			assert.Nil(t, res.Steps[0].Reminded, "reminders leaked into step 0")
			assert.Nil(t, res.Steps[2].Reminded, "reminders leaked into step 2")
		})
	}
}

func TestReminderFromPromptFunction(t *testing.T) {
	fn := func(p *prompt.Prompt) error {
		goal := p.Def("goal", "ship it")
		p.User(fmt.Sprintf("Work towards %s.", goal))
		goal.Remind()
		return nil
	}
	m := snapshots.Script(snapshots.Text("ok"))
	run(t, m, fn, runtime.Config{})
	want := []string{
		"user: Work towards <goal>.",
		"user: <reminder>\nKeep these in mind for your next action:\n- <goal> (variable)\n</reminder>",
	}
	assert.Empty(t, cmp.Diff(want, transcriptOf(m.Requests()[0].Messages)), "request mismatch (-want +got)")
}

func TestDeclaredMessagesDoNotPileUp(t *testing.T) {
	fn := func(p *prompt.Prompt) error {
		p.DefMessage(defs.RoleSystem, "You are terse.")
		p.User("Find the answer.")
		p.DefMessage(defs.RoleAssistant, "I will look it up.")
		prompt.DefTool(p, "look", "Look.", func(context.Context, noArgs) (string, error) { return "42", nil })
		return nil
	}
	m := snapshots.Script(snapshots.CallTool("look", nil), snapshots.CallTool("look", nil), snapshots.Text("42"))
	run(t, m, fn, runtime.Config{})
	want := []string{
		"system: You are terse.",
		"user: Find the answer.",
		"assistant: I will look it up.",
		"assistant:  {call_1 look {}}",
		"tool[call_1 look]: 42",
		"assistant:  {call_2 look {}}",
		"tool[call_2 look]: 42",
	}
	assert.Empty(t, cmp.Diff(want, transcriptOf(m.Requests()[2].Messages)), "last request mismatch (-want +got)")
}

func TestToolDeclaredAtLaterStepWorks(t *testing.T) {
	fn := func(p *prompt.Prompt) error {
		unlocked, setUnlocked := prompt.State(p, "unlocked", false)
		prompt.DefTool(p, "unlock", "Unlock.", func(ctx context.Context, _ noArgs) (string, error) {
			setUnlocked.Set(ctx, true)
			return "unlocked", nil
		})
		if unlocked {
			prompt.DefTool(p, "secret", "Read the secret.", func(_ context.Context, a amountArgs) (string, error) {
				return fmt.Sprintf("secret #%d", a.N), nil
			})
		}
		p.User("go")
		return nil
	}
	m := snapshots.Script(snapshots.CallTool("unlock", nil), snapshots.CallTool("secret", amountArgs{N: 7}), snapshots.Text("done"))
	res := run(t, m, fn, runtime.Config{})
	assert.Empty(t, cmp.Diff([]string{"unlock", "secret"}, toolNames(m.Requests()[1])), "step 1 tools mismatch (-want +got)")
	r := res.Steps[1].ToolResults[0]
	assert.False(t, r.IsError, "step 1 result: IsError")
	assert.Equal(t, "secret #7", r.Content, "step 1 result")
}

func TestToolFailuresBecomeErrorResults(t *testing.T) {
	var panicSite string
	var ran atomic.Int32
	fn := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "add", "Add.", func(_ context.Context, a amountArgs) (string, error) {
			ran.Add(1)
			if a.N < 0 {
				return "", errors.New("negative amounts are not allowed")
			}
			return "ok", nil
		})
		prompt.DefTool(p, "crash", "Crash.", func(context.Context, noArgs) (string, error) {
			m := missingConfig()
			panicSite = nextLine()
			m["x"] += "!"
			return "", nil
		})
		p.User("go")
		return nil
	}
	tests := []struct {
		name  string
		call  snapshots.Reply
		want  []string // substrings of the error result
		ranOK bool     // whether the tool function ran
	}{
		{"missing required argument", snapshots.CallTool("add", map[string]any{}), []string{`invalid arguments for tool "add"`, "n"}, false},
		{"wrong argument type", snapshots.CallTool("add", map[string]any{"n": "five"}), []string{`invalid arguments for tool "add"`, "n"}, false},
		{"invalid JSON", snapshots.CallTool("add", `{"n":`), []string{`invalid arguments for tool "add"`, "not valid JSON"}, false},
		{"unknown tool", snapshots.CallTool("sub", amountArgs{N: 1}), []string{`unknown tool "sub"`, "are: add, crash"}, false},
		{"tool error", snapshots.CallTool("add", amountArgs{N: -1}), []string{"negative amounts are not allowed"}, true},
		{"tool panic", snapshots.CallTool("crash", nil), []string{`tool "crash" panicked: `, "nil map"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ran.Store(0)
			m := snapshots.Script(tt.call, snapshots.Text("recovered"))
			res := run(t, m, fn, runtime.Config{})
			r := res.Steps[0].ToolResults[0]
			// An error result for the call.
			assert.True(t, r.IsError, "result: IsError")
			assert.True(t, strings.HasPrefix(r.Content, "error: "), "result %q, want it to start with error: ", r.Content)
			assert.Equal(t, tt.call.Calls[0].Name, r.Name, "result: Name")
			assert.Equal(t, "call_1", r.CallID, "result: CallID")
			want := tt.want
			if tt.name == "tool panic" {
				// The site is in the step record, not in the model's text.
				assert.NotContains(t, r.Content, panicSite, "the result shows the model the panic's site")
				var pe *runtime.ToolPanicError
				if assert.ErrorAs(t, res.Steps[0].ToolErrors[r.CallID], &pe, "ToolErrors[%s]", r.CallID) {
					assert.Equal(t, panicSite, pe.Site, "ToolPanicError.Site")
				}
			}
			for _, s := range want {
				assert.Contains(t, r.Content, s, "result")
			}
			assert.Equal(t, tt.ranOK, ran.Load() > 0, "tool function ran")
			// The run goes on: the model sees the error and answers.
			assert.Equal(t, "recovered", res.Text, "run's text")
			assert.Len(t, m.Requests(), 2, "requests")
			msgs := m.Requests()[1].Messages
			last := msgs[len(msgs)-1]
			assert.Equal(t, defs.RoleTool, last.Role, "next request's last message: Role")
			assert.True(t, last.IsError, "next request's last message: IsError")
			assert.Equal(t, r.Content, last.Content, "next request's last message: Content")
		})
	}
}

func TestParallelToolCallsRunConcurrentlyResultsInCallOrder(t *testing.T) {
	synctest.Test(t, testParallelToolCallsRunConcurrentlyResultsInCallOrder)
}

// It runs in a synctest bubble: the calls' waits pass in fake time, so
// they finish in the reverse order for sure, and calls made one after
// another fail at once on the barrier's time limit.
func testParallelToolCallsRunConcurrentlyResultsInCallOrder(t *testing.T) {
	const n = 3
	var arrived sync.WaitGroup
	arrived.Add(n)
	released := make(chan struct{})
	go func() { arrived.Wait(); close(released) }()
	var finished []int
	var mu sync.Mutex
	fn := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "slow", "Wait for the others.", func(ctx context.Context, a amountArgs) (string, error) {
			arrived.Done()
			select {
			case <-released: // every call reached the barrier: they run at once
			case <-time.After(5 * time.Second):
				return "", errors.New("the other calls never arrived: tools ran one after another")
			}
			time.Sleep(time.Duration(n-a.N) * 10 * time.Millisecond) // the first call finishes last
			mu.Lock()
			finished = append(finished, a.N)
			mu.Unlock()
			return fmt.Sprintf("result %d", a.N), nil
		})
		p.User("go")
		return nil
	}
	calls := make([]snapshots.Call, n)
	for i := range calls {
		calls[i] = snapshots.Call{Name: "slow", Args: amountArgs{N: i}}
	}
	m := snapshots.Script(snapshots.CallTools(calls...), snapshots.Text("done"))
	res := run(t, m, fn, runtime.Config{})
	var got []string
	for _, r := range res.Steps[0].ToolResults {
		got = append(got, r.CallID+" "+r.Content)
	}
	want := []string{"call_1 result 0", "call_2 result 1", "call_3 result 2"}
	assert.Empty(t, cmp.Diff(want, got), "results mismatch (-want +got)")
	assert.Empty(t, cmp.Diff([]int{2, 1, 0}, finished), "completion order mismatch (-want +got)")
	wantMsgs := []string{
		"user: go",
		`assistant:  {call_1 slow {"n":0}} {call_2 slow {"n":1}} {call_3 slow {"n":2}}`,
		"tool[call_1 slow]: result 0",
		"tool[call_2 slow]: result 1",
		"tool[call_3 slow]: result 2",
	}
	assert.Empty(t, cmp.Diff(wantMsgs, transcriptOf(m.Requests()[1].Messages)), "transcript mismatch (-want +got)")
}

func TestParallelCallsMixedOutcomes(t *testing.T) {
	fn := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "ok", "d", func(context.Context, noArgs) (string, error) { return "fine", nil })
		prompt.DefTool(p, "boom", "d", func(context.Context, noArgs) (string, error) { panic("boom") })
		p.User("go")
		return nil
	}
	m := snapshots.Script(
		snapshots.CallTools(snapshots.Call{Name: "boom"}, snapshots.Call{Name: "nope"}, snapshots.Call{Name: "ok"}),
		snapshots.Text("done"),
	)
	res := run(t, m, fn, runtime.Config{})
	var got []string
	for _, r := range res.Steps[0].ToolResults {
		got = append(got, fmt.Sprintf("%s %s %v", r.CallID, r.Name, r.IsError))
	}
	assert.Empty(t, cmp.Diff([]string{"call_1 boom true", "call_2 nope true", "call_3 ok false"}, got), "results mismatch (-want +got)")
	assert.NoError(t, runtime.ValidateMessages(m.Requests()[1].Messages), "request after mixed outcomes is invalid")
}

func TestSubAgent(t *testing.T) {
	var subExecutions, subEffectRuns atomic.Int32
	var subInput string
	researcher := func(p *prompt.Prompt) error {
		subExecutions.Add(1)
		subInput = p.Input()
		notes, setNotes := prompt.State(p, "notes", 0)
		p.DefSystem("role", "You research.")
		p.Def("notes", fmt.Sprint(notes))
		prompt.DefTool(p, "note", "Take a note.", func(ctx context.Context, _ noArgs) (string, error) {
			setNotes.Update(ctx, func(n int) int { return n + 1 })
			return "noted", nil
		})
		p.Effect(effects.Once, func(context.Context, *effects.Step) error { subEffectRuns.Add(1); return nil })
		return nil
	}
	parent := func(p *prompt.Prompt) error {
		p.DefSystem("role", "You delegate.")
		p.DefAgent("researcher", "Research a question.", researcher)
		p.User("What is the answer?")
		return nil
	}
	m := snapshots.Script(
		snapshots.CallTool("researcher", prompt.AgentArgs{Task: "find the answer"}), // parent step 0
		snapshots.CallTool("note", nil),                                             // sub step 0
		snapshots.Text("The answer is 42."),                                         // sub step 1: final answer
		snapshots.Text("42."),                                                       // parent step 1
	)
	res := run(t, m, parent, runtime.Config{})
	reqs := m.Requests()
	require.Len(t, reqs, 4, "requests")
	wantSys := []string{
		"<role>\nYou delegate.\n</role>",
		"<role>\nYou research.\n</role>\n\n<variables>\n<notes>0</notes>\n</variables>",
		"<role>\nYou research.\n</role>\n\n<variables>\n<notes>1</notes>\n</variables>",
		"<role>\nYou delegate.\n</role>",
	}
	assert.Empty(t, cmp.Diff(wantSys, systems(reqs)), "system prompts mismatch (-want +got)")
	assert.Empty(t, cmp.Diff([]string{"user: find the answer"}, transcriptOf(reqs[1].Messages)), "sub-agent's first request mismatch (-want +got)")
	assert.Empty(t, cmp.Diff([]string{"note"}, toolNames(reqs[1])), "sub-agent tools mismatch (-want +got)")
	wantParent := []string{
		"user: What is the answer?",
		`assistant:  {call_1 researcher {"task":"find the answer"}}`,
		"tool[call_1 researcher]: The answer is 42.",
	}
	assert.Empty(t, cmp.Diff(wantParent, transcriptOf(reqs[3].Messages)), "parent's second request mismatch (-want +got)")
	assert.Equal(t, int32(2), subExecutions.Load(), "sub-agent: executions")
	assert.Equal(t, int32(1), subEffectRuns.Load(), "sub-agent: effect runs")
	assert.Equal(t, "find the answer", subInput, "sub-agent: input")
	assert.NotContains(t, res.Steps[1].State, "notes", "the sub-agent's state leaked into the parent's")
	assert.Equal(t, "42.", res.Text, "parent: text")
	assert.Len(t, res.Steps, 2, "parent: steps")
}

func TestSubAgentFailureIsErrorResult(t *testing.T) {
	parent := func(p *prompt.Prompt) error {
		p.DefAgent("worker", "Work.", func(p *prompt.Prompt) error {
			prompt.DefTool(p, "spin", "Spin.", func(context.Context, noArgs) (string, error) { return "again", nil })
			return nil
		})
		p.User("go")
		return nil
	}
	m := snapshots.Script(
		snapshots.CallTool("worker", prompt.AgentArgs{Task: "spin forever"}),
		snapshots.CallTool("spin", nil),
		snapshots.CallTool("spin", nil),
		snapshots.Text("gave up"),
	)
	res := run(t, m, parent, runtime.Config{AgentMaxSteps: 2})
	r := res.Steps[0].ToolResults[0]
	// An error naming the sub-agent and its step limit.
	assert.True(t, r.IsError, "result: IsError")
	assert.Contains(t, r.Content, `sub-agent "worker"`, "result")
	assert.Contains(t, r.Content, "step limit", "result")
	assert.Equal(t, "gave up", res.Text, "parent's text")
}

func TestSubAgentUnderSessionStore(t *testing.T) {
	parent := func(p *prompt.Prompt) error {
		p.DefAgent("worker", "Work.", func(*prompt.Prompt) error { return nil })
		p.User("go")
		return nil
	}
	m := snapshots.Script(
		snapshots.CallTool("worker", prompt.AgentArgs{Task: "t"}),
		snapshots.Text("sub answer"),
		snapshots.Text("done"),
	)
	res := run(t, m, parent, runtime.Config{Store: session.NewMemory(), SessionID: "parent"})
	// The sub-agent's answer: a sub-agent must not write into the parent's session.
	r := res.Steps[0].ToolResults[0]
	assert.False(t, r.IsError, "sub-agent result %+v: IsError", r)
	assert.Equal(t, "sub answer", r.Content, "sub-agent result")
}

func TestParallelSubAgentsAndStateUpdates(t *testing.T) {
	worker := func(p *prompt.Prompt) error {
		n, set := prompt.State(p, "n", 0) // the sub-agent's own state
		set.Set(p.Context(), n+1)
		p.DefSystem("role", "You work on: "+p.Input())
		return nil
	}
	parent := func(p *prompt.Prompt) error {
		_, setDone := prompt.State(p, "done", 0)
		p.DefAgent("worker", "Work.", worker)
		prompt.DefTool(p, "tick", "Tick.", func(ctx context.Context, _ noArgs) (string, error) {
			setDone.Update(ctx, func(n int) int { return n + 1 }) // applied to the live value
			return "tick", nil
		})
		p.User("go")
		return nil
	}
	// Sub-agents share the script, in whatever order they reach it: each
	// answers from its own request.
	answer := snapshots.Reply{Func: func(req *llm.Request) snapshots.Reply {
		return snapshots.Text("done: " + req.Messages[0].Content)
	}}
	m := snapshots.Script(
		snapshots.CallTools(
			snapshots.Call{Name: "worker", Args: prompt.AgentArgs{Task: "A"}},
			snapshots.Call{Name: "tick"},
			snapshots.Call{Name: "worker", Args: prompt.AgentArgs{Task: "B"}},
			snapshots.Call{Name: "tick"},
			snapshots.Call{Name: "tick"},
		),
		answer, answer,
		snapshots.Text("all done"),
	)
	res := run(t, m, parent, runtime.Config{})
	var got []string
	for _, r := range res.Steps[0].ToolResults {
		got = append(got, r.Name+" "+r.Content)
	}
	want := []string{"worker done: A", "tick tick", "worker done: B", "tick tick", "tick tick"}
	assert.Empty(t, cmp.Diff(want, got), "results mismatch (-want +got)")
	assert.Empty(t, cmp.Diff(map[string]any{"done": 3}, res.Steps[0].State), "parent state mismatch (-want +got)")
	var subSystems []string
	for _, r := range m.Requests()[1:3] {
		subSystems = append(subSystems, r.System)
	}
	slices.Sort(subSystems)
	assert.Empty(t, cmp.Diff([]string{"<role>\nYou work on: A\n</role>", "<role>\nYou work on: B\n</role>"}, subSystems), "sub-agent system prompts mismatch (-want +got)")
}

func TestHookMisuseFromToolAndEffect(t *testing.T) {
	t.Run("tool", func(t *testing.T) {
		var site string
		fn := func(p *prompt.Prompt) error {
			prompt.DefTool(p, "sneaky", "d", func(context.Context, noArgs) (string, error) {
				site = nextLine()
				p.Def("late", "x") // a hook outside the prompt function
				return "unreached", nil
			})
			p.User("go")
			return nil
		}
		m := snapshots.Script(snapshots.CallTool("sneaky", nil), snapshots.Text("ok"))
		// A programmer's mistake ends the run, naming the site; the model is
		// not asked to deal with it (issue 23 item 14).
		res, err := runtime.Run(context.Background(), m, fn, runtime.Config{})
		var perr *prompt.Error
		require.ErrorAs(t, err, &perr)
		var me *prompt.MisuseError
		require.ErrorAs(t, err, &me)
		assert.Equal(t, "Def", me.Hook, "MisuseError.Hook")
		assert.Equal(t, site, me.Site, "MisuseError.Site")
		assert.Equal(t, site, perr.Site, "Error.Site")
		assert.Equal(t, 0, perr.Step)
		assert.Contains(t, err.Error(), `tool "sneaky"`)
		assert.Len(t, m.Requests(), 1, "the model was not asked again")
		require.Len(t, res.Steps, 1)
		assert.Equal(t, []string{"user: go"}, transcriptOf(res.Transcript), "the step did not complete")
	})
	t.Run("setter without the call's context", func(t *testing.T) {
		fn := func(p *prompt.Prompt) error {
			_, setN := prompt.State(p, "n", 0)
			prompt.DefTool(p, "careless", "d", func(context.Context, noArgs) (string, error) {
				setN.Set(context.Background(), 1) // not the call's context
				return "unreached", nil
			})
			p.User("go")
			return nil
		}
		m := snapshots.Script(snapshots.CallTool("careless", nil), snapshots.Text("ok"))
		_, err := runtime.Run(context.Background(), m, fn, runtime.Config{})
		var ce *state.ContextError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, "n", ce.Key)
		var perr *prompt.Error
		require.ErrorAs(t, err, &perr)
		assert.Contains(t, perr.Site, "tools_test.go:")
	})
	t.Run("effect", func(t *testing.T) {
		var site string
		fn := func(p *prompt.Prompt) error {
			p.Effect(effects.Once, func(context.Context, *effects.Step) error {
				site = nextLine()
				prompt.State(p, "late", 0)
				return nil
			})
			p.User("go")
			return nil
		}
		m := snapshots.Script(snapshots.Text("unreached"))
		_, err := runtime.Run(context.Background(), m, fn, runtime.Config{})
		var ee *effects.Error
		var me *prompt.MisuseError
		require.ErrorAs(t, err, &ee, "Run")
		require.ErrorAs(t, err, &me, "Run, want the *prompt.MisuseError wrapped")
		assert.Equal(t, "State", me.Hook, "MisuseError.Hook")
		assert.Equal(t, site, me.Site, "MisuseError.Site")
	})
}

func TestSubAgentDeclaringItsTaskDoesNotRepeatIt(t *testing.T) {
	parent := func(p *prompt.Prompt) error {
		p.DefAgent("echo", "Echo.", func(p *prompt.Prompt) error {
			p.User(p.Input()) // the task is already its first message
			return nil
		})
		p.User("go")
		return nil
	}
	m := snapshots.Script(snapshots.CallTool("echo", prompt.AgentArgs{Task: "say hi"}), snapshots.Text("hi"), snapshots.Text("done"))
	run(t, m, parent, runtime.Config{})
	assert.Empty(t, cmp.Diff([]string{"user: say hi"}, transcriptOf(m.Requests()[1].Messages)), "sub-agent request mismatch (-want +got)")
}
