package defs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
)

func variable(name, text string) defs.Def {
	return defs.Def{Kind: defs.KindVariable, Name: name, Text: text}
}

func system(name, text string) defs.Def {
	return defs.Def{Kind: defs.KindSystem, Name: name, Text: text}
}

func tool(name string) defs.Def {
	return defs.Def{Kind: defs.KindTool, Name: name, Tool: &defs.Tool{
		Name: name,
		Call: func(context.Context, json.RawMessage) (string, error) { return name, nil },
	}}
}

// texts returns name=text for every definition of kind, in order.
func texts(r *defs.Registry, kind defs.Kind) []string {
	var out []string
	for d := range r.Collection(kind).All() {
		out = append(out, d.Name+"="+d.Text)
	}
	return out
}

func TestDeclareReplaceKeepsPosition(t *testing.T) {
	r := defs.NewRegistry()
	r.BeginExecution()
	r.Declare(variable("a", "1"))
	r.Declare(variable("b", "2"))
	r.Declare(variable("c", "3"))
	r.Reconcile()

	r.BeginExecution()
	r.Declare(variable("c", "30")) // declared first this time
	r.Declare(variable("a", "10"))
	r.Declare(variable("b", "20"))
	removed := r.Reconcile()
	assert.Empty(t, removed, "Reconcile removed %v, want nothing", removed)
	assert.Empty(t, cmp.Diff([]string{"a=10", "b=20", "c=30"}, texts(r, defs.KindVariable)), "variables mismatch (-want +got)")
}

func TestDeclareSameNameOtherKind(t *testing.T) {
	r := defs.NewRegistry()
	r.Declare(variable("x", "v"))
	r.Declare(system("x", "s"))
	r.Declare(tool("x"))
	for _, k := range []defs.Kind{defs.KindVariable, defs.KindSystem, defs.KindTool} {
		n := r.Collection(k).Len()
		assert.Equal(t, 1, n, "%s collection has %d definitions, want 1", k, n)
	}
}

func TestReconcileRemovesUndeclared(t *testing.T) {
	r := defs.NewRegistry()
	r.BeginExecution()
	r.Declare(variable("a", "1"))
	r.Declare(tool("search"))
	r.Declare(variable("b", "2"))
	r.Declare(system("role", "r"))
	r.Reconcile()

	r.BeginExecution()
	r.Declare(variable("b", "2"))
	removed := r.Reconcile()

	want := []defs.Def{variable("a", "1"), tool("search"), system("role", "r")}
	assert.Empty(t, cmp.Diff(want, removed, cmp.Comparer(func(a, b *defs.Tool) bool { return (a == nil) == (b == nil) && (a == nil || a.Name == b.Name) })), "removed mismatch (-want +got)")
	_, declared := r.Lookup(defs.KindTool, "search")
	assert.False(t, declared, "search is still declared after reconciliation")
	assert.Empty(t, cmp.Diff([]string{"b=2"}, texts(r, defs.KindVariable)), "variables mismatch (-want +got)")
	// A removed definition declared again comes back at the end.
	r.BeginExecution()
	r.Declare(variable("b", "2"))
	r.Declare(variable("a", "1"))
	r.Reconcile()
	assert.Empty(t, cmp.Diff([]string{"b=2", "a=1"}, texts(r, defs.KindVariable)), "variables mismatch (-want +got)")
}

func TestHandle(t *testing.T) {
	r := defs.NewRegistry()
	h := r.Declare(tool("search"))
	assert.True(t, h.Name() == "search" && h.Kind() == defs.KindTool, "handle = %s %s, want tool search", h.Kind(), h.Name())
	tests := []struct{ got, want string }{
		{h.Tag(), "<search>"},
		{h.String(), "<search>"},
		{fmt.Sprintf("use %s now", h), "use <search> now"},
		{fmt.Sprint(h), "<search>"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.got, "got %q, want %q", tt.got, tt.want)
	}
	got, ok := r.Handle(defs.KindTool, "search")
	assert.True(t, ok && got == h, "Registry.Handle = %v, %v; want %v, true", got, ok, h)
	_, ok = r.Handle(defs.KindTool, "nope")
	assert.False(t, ok, "Handle of an undeclared tool reported ok")
	// The zero handle does nothing.
	var zero defs.Handle
	zero.Disable()
	zero.Remind()
}

func TestKindAndRefString(t *testing.T) {
	tests := []struct{ got, want string }{
		{defs.KindVariable.String(), "variable"},
		{defs.KindSystem.String(), "system"},
		{defs.KindTool.String(), "tool"},
		{defs.Kind(9).String(), "Kind(9)"},
		{defs.Ref{Kind: defs.KindTool, Name: "x"}.String(), "tool:x"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.got, "got %q, want %q", tt.got, tt.want)
	}
}

func TestDisableAndRemindLastOneStep(t *testing.T) {
	r := defs.NewRegistry()
	r.BeginStep()
	r.BeginExecution()
	a := r.Declare(tool("a"))
	b := r.Declare(tool("b"))
	c := r.Declare(variable("c", "1"))
	r.Reconcile()

	b.Disable()
	a.Disable()
	r.Disable(defs.KindTool, "ghost") // not declared: reported last
	c.Remind()
	a.Remind()
	c.Remind() // named once

	assert.True(t, r.Disabled(defs.KindTool, "a") && r.Disabled(defs.KindTool, "b"), "a and b are not disabled")
	assert.False(t, r.Disabled(defs.KindVariable, "a"), "disabling tool a disabled variable a")
	wantDisabled := []defs.Ref{{Kind: defs.KindTool, Name: "a"}, {Kind: defs.KindTool, Name: "b"}, {Kind: defs.KindTool, Name: "ghost"}}
	assert.Empty(t, cmp.Diff(wantDisabled, r.DisabledRefs()), "DisabledRefs mismatch (-want +got)")
	wantReminded := []defs.Ref{{Kind: defs.KindVariable, Name: "c"}, {Kind: defs.KindTool, Name: "a"}}
	assert.Empty(t, cmp.Diff(wantReminded, r.Reminded()), "Reminded mismatch (-want +got)")
	var enabled []string
	for d := range r.Collection(defs.KindTool).Enabled() {
		enabled = append(enabled, d.Name)
	}
	assert.Empty(t, enabled, "enabled tools = %v, want none", enabled)

	r.BeginStep()
	assert.True(t, r.DisabledRefs() == nil && r.Reminded() == nil, "after BeginStep: disabled %v, reminded %v; want none", r.DisabledRefs(), r.Reminded())
	assert.False(t, r.Disabled(defs.KindTool, "a"), "a is still disabled at the next step")
	assert.Empty(t, cmp.Diff([]string{"a", "b"}, slices.Collect(names(r.Collection(defs.KindTool).Enabled()))), "enabled mismatch (-want +got)")
}

func names(seq func(func(defs.Def) bool)) func(func(string) bool) {
	return func(yield func(string) bool) {
		for d := range seq {
			if !yield(d.Name) {
				return
			}
		}
	}
}

func TestCollection(t *testing.T) {
	r := defs.NewRegistry()
	r.Declare(tool("read"))
	r.Declare(variable("v", "x"))
	r.Declare(tool("write"))
	r.Declare(tool("list"))
	tools := r.Collection(defs.KindTool)

	assert.True(t, tools.Has("write") && !tools.Has("v") && !tools.Has("nope"), "Has: write=%v v=%v nope=%v; want true false false", tools.Has("write"), tools.Has("v"), tools.Has("nope"))
	d, ok := tools.Get("write")
	assert.True(t, ok && d.Name == "write" && d.Tool != nil && d.Tool.Name == "write", "Get(write) = %+v, %v", d, ok)
	_, ok = tools.Get("v")
	assert.False(t, ok, "Get found a variable in the tool collection")
	assert.Empty(t, cmp.Diff([]string{"read", "write", "list"}, tools.Names()), "Names mismatch (-want +got)")
	assert.Equal(t, 3, tools.Len(), "Len = %d, want 3", tools.Len())
	filtered := tools.Filter(func(d defs.Def) bool { return d.Name != "write" })
	var got []string
	for _, d := range filtered {
		got = append(got, d.Name)
	}
	assert.Empty(t, cmp.Diff([]string{"read", "list"}, got), "Filter mismatch (-want +got)")

	h, ok := tools.Handle("list")
	require.True(t, ok, "Handle(list) not found")
	h.Disable()
	assert.Empty(t, cmp.Diff([]string{"read", "write"}, slices.Collect(names(tools.Enabled()))), "Enabled mismatch (-want +got)")
	assert.True(t, tools.Len() == 3 && tools.Has("list"), "a disabled tool left the collection (All/Len/Has include disabled definitions)")

	// Iteration stops when asked.
	n := 0
	for range tools.All() {
		n++
		break
	}
	assert.Equal(t, 1, n, "All yielded %d after break", n)

	// The collection is live.
	r.Declare(tool("late"))
	assert.True(t, tools.Has("late") && tools.Len() == 4, "collection does not see a later declaration")
}

func TestZeroCollectionIsEmpty(t *testing.T) {
	var c defs.Collection
	assert.True(t, !c.Has("x") && c.Len() == 0 && c.Names() == nil && c.Filter(func(defs.Def) bool { return true }) == nil, "zero collection is not empty")
	_, ok := c.Get("x")
	assert.False(t, ok, "zero collection Get found something")
	_, ok = c.Handle("x")
	assert.False(t, ok, "zero collection Handle found something")
	for range c.All() {
		assert.Fail(t, "zero collection yields")
	}
}

func TestConcurrentDisableRemindAndRead(t *testing.T) {
	r := defs.NewRegistry()
	hs := []defs.Handle{r.Declare(tool("a")), r.Declare(tool("b")), r.Declare(variable("c", "1"))}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 100 {
				hs[i%3].Disable()
				hs[(i+1)%3].Remind()
				_ = r.Collection(defs.KindTool).Names()
				_ = r.DisabledRefs()
				_ = r.Reminded()
			}
		})
	}
	wg.Wait()
	assert.True(t, len(r.DisabledRefs()) == 3 && len(r.Reminded()) == 3, "disabled %v, reminded %v; want all three each", r.DisabledRefs(), r.Reminded())
}

func TestMessageHelpers(t *testing.T) {
	res := defs.ToolResult{CallID: "call_1", Name: "search", Content: "boom", IsError: true}
	want := defs.Message{Role: defs.RoleTool, Content: "boom", ToolCallID: "call_1", Name: "search", IsError: true}
	assert.Empty(t, cmp.Diff(want, res.Message()), "ToolResult.Message mismatch (-want +got)")
	assert.Empty(t, cmp.Diff(defs.Message{Role: defs.RoleUser, Content: "hi"}, defs.UserMessage("hi")), "UserMessage mismatch (-want +got)")
	assert.Empty(t, cmp.Diff(defs.Message{Role: defs.RoleAssistant, Content: "ok"}, defs.AssistantMessage("ok")), "AssistantMessage mismatch (-want +got)")
}

func ExampleHandle_String() {
	r := defs.NewRegistry()
	h := r.Declare(defs.Def{Kind: defs.KindVariable, Name: "USER_NAME", Text: "Ada"})
	fmt.Printf("Greet the user by %s.\n", h)
	// Output: Greet the user by <USER_NAME>.
}

func ExampleRegistry_Reconcile() {
	r := defs.NewRegistry()
	r.BeginExecution()
	r.Declare(defs.Def{Kind: defs.KindSystem, Name: "role", Text: "You help."})
	r.Declare(defs.Def{Kind: defs.KindSystem, Name: "onboarding", Text: "Introduce yourself."})
	r.Reconcile()

	r.BeginExecution() // the next execution no longer declares onboarding
	r.Declare(defs.Def{Kind: defs.KindSystem, Name: "role", Text: "You help."})
	for _, d := range r.Reconcile() {
		fmt.Println("removed", d.Kind, d.Name)
	}
	fmt.Println(r.Collection(defs.KindSystem).Names())
	// Output:
	// removed system onboarding
	// [role]
}

func TestMessageIdentical(t *testing.T) {
	base := defs.Message{Role: defs.RoleAssistant, Content: "c", Reasoning: "r",
		ToolCalls: []defs.ToolCall{{ID: "1", Name: "n", Arguments: []byte(`{}`)}}, Meta: map[string]string{"k": "v"}}
	require.True(t, base.Identical(base), "a message is not identical to itself")
	for name, change := range map[string]func(m *defs.Message){
		"content":   func(m *defs.Message) { m.Content = "x" },
		"reasoning": func(m *defs.Message) { m.Reasoning = "x" },
		"is error":  func(m *defs.Message) { m.IsError = true },
		"arguments": func(m *defs.Message) {
			m.ToolCalls = []defs.ToolCall{{ID: "1", Name: "n", Arguments: []byte(`{"a":1}`)}}
		},
		"meta": func(m *defs.Message) { m.Meta = map[string]string{"k": "w"} },
	} {
		m := base
		change(&m)
		assert.False(t, base.Identical(m), "%s: a changed message is identical", name)
	}
}

// TestAppendEnabledMatchesEnabled checks that AppendEnabled lists what
// iterating over Collection.Enabled lists, kind by kind, with and without
// disables, and appends after what dst holds.
func TestAppendEnabledMatchesEnabled(t *testing.T) {
	r := defs.NewRegistry()
	r.Declare(system("role", "r"))
	r.Declare(variable("a", "1"))
	r.Declare(system("rules", "x"))
	r.Declare(variable("b", "2"))
	r.Declare(defs.Def{Kind: defs.KindTool, Name: "a", Tool: &defs.Tool{Name: "a"}})
	check := func(stage string) {
		t.Helper()
		for _, k := range []defs.Kind{defs.KindSystem, defs.KindVariable, defs.KindTool} {
			want := []defs.Def{variable("before", "")}
			for d := range r.Collection(k).Enabled() {
				want = append(want, d)
			}
			got := r.AppendEnabled([]defs.Def{variable("before", "")}, k)
			assert.Empty(t, cmp.Diff(want, got), "%s, %s (-Enabled +AppendEnabled)", stage, k)
		}
	}
	check("nothing disabled")
	r.Disable(defs.KindSystem, "role")
	r.Disable(defs.KindVariable, "b")
	r.Disable(defs.KindTool, "b") // not a tool: disables nothing
	check("some disabled")
	got := r.AppendEnabled(nil, defs.KindSystem)
	assert.True(t, len(got) == 1 && got[0].Name == "rules", "enabled systems %v, want rules only", got)
}

// TestDeclareWhileOthersRead checks, under the race detector, executions
// that declare definitions again (unchanged, changed, new and dropped)
// while other goroutines read and disable them, and that each execution
// leaves the definitions it declared, with their values.
func TestDeclareWhileOthersRead(t *testing.T) {
	r := defs.NewRegistry()
	ta := tool("a")
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				for d := range r.Collection(defs.KindVariable).All() {
					_ = d.Text
				}
				r.Disable(defs.KindTool, "a")
				_, _ = r.Lookup(defs.KindVariable, "v")
			}
		})
	}
	for i := range 300 {
		r.BeginExecution()
		r.Declare(system("role", "same"))
		r.Declare(variable("v", fmt.Sprint(i%3))) // changes at most steps
		r.Declare(ta)
		if i%2 == 0 {
			r.Declare(variable("sometimes", "x"))
		}
		r.Reconcile()
		want := []string{"v"}
		if i%2 == 0 {
			want = append(want, "sometimes")
		}
		got := r.Collection(defs.KindVariable).Names()
		require.True(t, slices.Equal(got, want), "execution %d: variables %v, want %v", i, got, want)
		d, _ := r.Lookup(defs.KindVariable, "v")
		require.Equal(t, fmt.Sprint(i%3), d.Text, "execution %d: v", i)
	}
	close(done)
	wg.Wait()
}

// TestDisabledByAndRemindedBy: the first to disable or remind a
// definition in a step is the one named, and BeginStep forgets them.
func TestDisabledByAndRemindedBy(t *testing.T) {
	r := defs.NewRegistry()
	r.Disable(defs.KindTool, "a")
	r.SetActor("#1")
	r.Disable(defs.KindTool, "a") // already disabled: still the prompt function's
	r.Disable(defs.KindTool, "b")
	r.Remind(defs.KindVariable, "v")
	r.SetActor("")
	r.Remind(defs.KindVariable, "w")

	by, ok := r.DisabledBy(defs.KindTool, "a")
	assert.True(t, ok)
	assert.Equal(t, "", by, "a: disabled first by the prompt function")
	by, ok = r.DisabledBy(defs.KindTool, "b")
	assert.True(t, ok)
	assert.Equal(t, "#1", by)
	_, ok = r.DisabledBy(defs.KindTool, "c")
	assert.False(t, ok)
	by, ok = r.RemindedBy(defs.KindVariable, "v")
	assert.True(t, ok)
	assert.Equal(t, "#1", by)
	by, ok = r.RemindedBy(defs.KindVariable, "w")
	assert.True(t, ok)
	assert.Equal(t, "", by)

	r.BeginStep()
	_, ok = r.DisabledBy(defs.KindTool, "b")
	assert.False(t, ok, "after BeginStep")
	_, ok = r.RemindedBy(defs.KindVariable, "v")
	assert.False(t, ok, "after BeginStep")
}
