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

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/snapshots"
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
			if diff := cmp.Diff([]string{"read"}, toolNames(reqs[0])); diff != "" {
				t.Errorf("step 0 tools mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"read", "delete"}, toolNames(reqs[1])); diff != "" {
				t.Errorf("step 1 tools mismatch (-want +got):\n%s", diff)
			}
			r0 := res.Steps[0].ToolResults[0]
			want0 := defs.ToolResult{CallID: "call_1", Name: "delete", Arguments: []byte("{}"),
				Content: `error: tool "delete" is disabled at this step and was not run`, IsError: true}
			if diff := cmp.Diff(want0, r0); diff != "" {
				t.Errorf("step 0 result mismatch (-want +got):\n%s", diff)
			}
			if r1 := res.Steps[1].ToolResults[0]; r1.IsError || r1.Content != "deleted" {
				t.Errorf("step 1 result = %+v, want the tool to run", r1)
			}
			if n := deletes.Load(); n != 1 {
				t.Errorf("delete ran %d times, want 1 (only when enabled)", n)
			}
			// The model sees the error result.
			if diff := cmp.Diff("tool[call_1 delete]!: "+want0.Content, transcriptOf(reqs[1].Messages)[2]); diff != "" {
				t.Errorf("error result in the next request mismatch (-want +got):\n%s", diff)
			}
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
	if diff := cmp.Diff(want, res.Steps[0].Disabled); diff != "" {
		t.Errorf("Disabled mismatch (-want +got):\n%s", diff)
	}
	if req := m.Requests()[0]; req.System != "" || len(req.Tools) != 0 {
		t.Errorf("request with everything disabled: system %q, tools %v", req.System, toolNames(req))
	}
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
			if diff := cmp.Diff(tt.want1, transcriptOf(reqs[1].Messages)); diff != "" {
				t.Errorf("step 1 request mismatch (-want +got):\n%s", diff)
			}
			last := reqs[1].Messages[len(reqs[1].Messages)-1]
			if last.Role != defs.RoleUser || last.Meta["reminder"] != "true" {
				t.Errorf("reminder message = %+v, want a user message marked as reminder", last)
			}
			// For this step only: not in the transcript, not in the next request.
			for i, r := range []*llm.Request{reqs[0], reqs[2]} {
				for _, msg := range r.Messages {
					if strings.Contains(msg.Content, "<reminder>") {
						t.Errorf("request %d carries a reminder", 2*i)
					}
				}
			}
			for _, msg := range res.Transcript {
				if strings.Contains(msg.Content, "<reminder>") {
					t.Error("the reminder reached the transcript")
				}
			}
			want := []defs.Ref{{Kind: defs.KindSystem, Name: "rules"}, {Kind: defs.KindTool, Name: "lookup"}}
			if diff := cmp.Diff(want, res.Steps[1].Reminded); diff != "" {
				t.Errorf("Reminded mismatch (-want +got):\n%s", diff)
			}
			if res.Steps[0].Reminded != nil || res.Steps[2].Reminded != nil {
				t.Error("reminders leaked into other steps")
			}
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
	if diff := cmp.Diff(want, transcriptOf(m.Requests()[0].Messages)); diff != "" {
		t.Errorf("request mismatch (-want +got):\n%s", diff)
	}
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
	if diff := cmp.Diff(want, transcriptOf(m.Requests()[2].Messages)); diff != "" {
		t.Errorf("last request mismatch (-want +got):\n%s", diff)
	}
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
	if diff := cmp.Diff([]string{"unlock", "secret"}, toolNames(m.Requests()[1])); diff != "" {
		t.Errorf("step 1 tools mismatch (-want +got):\n%s", diff)
	}
	if r := res.Steps[1].ToolResults[0]; r.IsError || r.Content != "secret #7" {
		t.Errorf("result = %+v", r)
	}
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
			if !r.IsError || !strings.HasPrefix(r.Content, "error: ") || r.Name != tt.call.Calls[0].Name || r.CallID != "call_1" {
				t.Errorf("result = %+v, want an error result for %s", r, tt.call.Calls[0].Name)
			}
			want := tt.want
			if tt.name == "tool panic" {
				// The site is in the step record, not in the model's text.
				if strings.Contains(r.Content, panicSite) {
					t.Errorf("result %q shows the model the panic's site", r.Content)
				}
				var pe *runtime.ToolPanicError
				if err := res.Steps[0].ToolErrors[r.CallID]; !errors.As(err, &pe) || pe.Site != panicSite {
					t.Errorf("ToolErrors[%s] = %v, want a panic at %s", r.CallID, err, panicSite)
				}
			}
			for _, s := range want {
				if !strings.Contains(r.Content, s) {
					t.Errorf("result %q does not contain %q", r.Content, s)
				}
			}
			if got := ran.Load() > 0; got != tt.ranOK {
				t.Errorf("tool function ran: %v, want %v", got, tt.ranOK)
			}
			// The run goes on: the model sees the error and answers.
			if res.Text != "recovered" || len(m.Requests()) != 2 {
				t.Errorf("run ended with %q after %d requests", res.Text, len(m.Requests()))
			}
			msgs := m.Requests()[1].Messages
			if last := msgs[len(msgs)-1]; last.Role != defs.RoleTool || !last.IsError || last.Content != r.Content {
				t.Errorf("next request's last message = %+v", last)
			}
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
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{2, 1, 0}, finished); diff != "" {
		t.Errorf("completion order mismatch (-want +got):\n%s", diff)
	}
	wantMsgs := []string{
		"user: go",
		`assistant:  {call_1 slow {"n":0}} {call_2 slow {"n":1}} {call_3 slow {"n":2}}`,
		"tool[call_1 slow]: result 0",
		"tool[call_2 slow]: result 1",
		"tool[call_3 slow]: result 2",
	}
	if diff := cmp.Diff(wantMsgs, transcriptOf(m.Requests()[1].Messages)); diff != "" {
		t.Errorf("transcript mismatch (-want +got):\n%s", diff)
	}
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
	if diff := cmp.Diff([]string{"call_1 boom true", "call_2 nope true", "call_3 ok false"}, got); diff != "" {
		t.Errorf("results mismatch (-want +got):\n%s", diff)
	}
	if err := runtime.ValidateMessages(m.Requests()[1].Messages); err != nil {
		t.Errorf("request after mixed outcomes is invalid: %v", err)
	}
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
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	wantSys := []string{
		"<role>\nYou delegate.\n</role>",
		"<role>\nYou research.\n</role>\n\n<variables>\n<notes>0</notes>\n</variables>",
		"<role>\nYou research.\n</role>\n\n<variables>\n<notes>1</notes>\n</variables>",
		"<role>\nYou delegate.\n</role>",
	}
	if diff := cmp.Diff(wantSys, systems(reqs)); diff != "" {
		t.Errorf("system prompts mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"user: find the answer"}, transcriptOf(reqs[1].Messages)); diff != "" {
		t.Errorf("sub-agent's first request mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"note"}, toolNames(reqs[1])); diff != "" {
		t.Errorf("sub-agent tools mismatch (-want +got):\n%s", diff)
	}
	wantParent := []string{
		"user: What is the answer?",
		`assistant:  {call_1 researcher {"task":"find the answer"}}`,
		"tool[call_1 researcher]: The answer is 42.",
	}
	if diff := cmp.Diff(wantParent, transcriptOf(reqs[3].Messages)); diff != "" {
		t.Errorf("parent's second request mismatch (-want +got):\n%s", diff)
	}
	if subExecutions.Load() != 2 || subEffectRuns.Load() != 1 || subInput != "find the answer" {
		t.Errorf("sub-agent: %d executions, effect ran %d times, input %q", subExecutions.Load(), subEffectRuns.Load(), subInput)
	}
	if _, ok := res.Steps[1].State["notes"]; ok {
		t.Error("the sub-agent's state leaked into the parent's")
	}
	if res.Text != "42." || len(res.Steps) != 2 {
		t.Errorf("parent: text %q, %d steps", res.Text, len(res.Steps))
	}
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
	if !r.IsError || !strings.Contains(r.Content, `sub-agent "worker"`) || !strings.Contains(r.Content, "step limit") {
		t.Errorf("result = %+v, want an error naming the sub-agent and its step limit", r)
	}
	if res.Text != "gave up" {
		t.Errorf("parent ended with %q", res.Text)
	}
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
	if r := res.Steps[0].ToolResults[0]; r.IsError || r.Content != "sub answer" {
		t.Errorf("sub-agent result = %+v, want its answer: a sub-agent must not write into the parent's session", r)
	}
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
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"done": 3}, res.Steps[0].State); diff != "" {
		t.Errorf("parent state mismatch (-want +got):\n%s", diff)
	}
	var subSystems []string
	for _, r := range m.Requests()[1:3] {
		subSystems = append(subSystems, r.System)
	}
	slices.Sort(subSystems)
	if diff := cmp.Diff([]string{"<role>\nYou work on: A\n</role>", "<role>\nYou work on: B\n</role>"}, subSystems); diff != "" {
		t.Errorf("sub-agent system prompts mismatch (-want +got):\n%s", diff)
	}
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
		res := run(t, m, fn, runtime.Config{})
		r := res.Steps[0].ToolResults[0]
		for _, s := range []string{`tool "sneaky" panicked`, "Def: ", "outside the prompt function"} {
			if !r.IsError || !strings.Contains(r.Content, s) {
				t.Errorf("result %q does not contain %q", r.Content, s)
			}
		}
		err := res.Steps[0].ToolErrors[r.CallID]
		var pe *runtime.ToolPanicError
		var me *prompt.MisuseError
		if !errors.As(err, &pe) || !errors.As(err, &me) {
			t.Fatalf("ToolErrors[%s] = %v, want *runtime.ToolPanicError wrapping *prompt.MisuseError", r.CallID, err)
		}
		if pe.Tool != "sneaky" || me.Hook != "Def" || me.Site != site {
			t.Errorf("ToolPanicError %+v, MisuseError %+v: want tool sneaky, Def at %s", pe, me, site)
		}
		// What the model reads is the contract here: no Go source location.
		if strings.Contains(r.Content, site) {
			t.Errorf("result %q names the misuse's site %s: it belongs in ToolErrors only", r.Content, site)
		}
		if m.Requests()[1].System != "" {
			t.Error("the misused hook declared a variable")
		}
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
		if !errors.As(err, &ee) || !errors.As(err, &me) {
			t.Fatalf("Run = %v, want *effects.Error wrapping *prompt.MisuseError", err)
		}
		if me.Hook != "State" || me.Site != site {
			t.Errorf("MisuseError = %+v, want State at %s", me, site)
		}
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
	if diff := cmp.Diff([]string{"user: say hi"}, transcriptOf(m.Requests()[1].Messages)); diff != "" {
		t.Errorf("sub-agent request mismatch (-want +got):\n%s", diff)
	}
}
