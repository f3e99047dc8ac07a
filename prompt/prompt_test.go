package prompt_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/state"
)

// next returns "file.go:N+1" for the caller's line N: the site of the
// statement on the line below the call.
func next() string {
	_, file, line, _ := goruntime.Caller(1)
	return fmt.Sprintf("%s:%d", filepath.Base(file), line+1)
}

func TestHooksOutsideExecutionPanicWithCallerSite(t *testing.T) {
	p := prompt.New("")
	if _, err := p.Execute(0, func(*prompt.Prompt) error { return nil }); err != nil {
		t.Fatal(err)
	}
	type A struct {
		X int `json:"x"`
	}
	hooks := []struct {
		hook string
		call func(site *string) // sets the site it calls the hook at
	}{
		{"Def", func(site *string) {
			*site = next()
			p.Def("a", "b")
		}},
		{"DefData", func(site *string) {
			*site = next()
			p.DefData("a", 1)
		}},
		{"DefSystem", func(site *string) {
			*site = next()
			p.DefSystem("a", "b")
		}},
		{"DefMessage", func(site *string) {
			*site = next()
			p.DefMessage(defs.RoleUser, "b")
		}},
		{"User", func(site *string) {
			*site = next()
			p.User("b")
		}},
		{"Effect", func(site *string) {
			*site = next()
			p.Effect(effects.Always, nil)
		}},
		{"DefAgent", func(site *string) {
			*site = next()
			p.DefAgent("a", "b", nil)
		}},
		{"State", func(site *string) {
			*site = next()
			prompt.State(p, "k", 0)
		}},
		{"DefTool", func(site *string) {
			*site = next()
			prompt.DefTool(p, "t", "d", func(context.Context, A) (string, error) { return "", nil })
		}},
	}
	for _, h := range hooks {
		t.Run(h.hook, func(t *testing.T) {
			var site string
			v := func() (v any) {
				defer func() { v = recover() }()
				h.call(&site)
				return nil
			}()
			me, ok := v.(*prompt.MisuseError)
			if !ok {
				t.Fatalf("panic value = %#v, want *prompt.MisuseError", v)
			}
			if me.Hook != h.hook || me.Site != site {
				t.Errorf("MisuseError{Hook: %q, Site: %q}, want {%q, %q}", me.Hook, me.Site, h.hook, site)
			}
			// The message is the contract here: it names the user's call
			// site and the mistake (errOutside is not exported).
			if !strings.Contains(me.Error(), site) || !strings.Contains(me.Error(), "outside the prompt function") {
				t.Errorf("error %q does not explain the misuse at %s", me, site)
			}
		})
	}
	// Setters and GetState may be used at any time.
	set := func() state.Setter[int] {
		var s state.Setter[int]
		_, _ = p.Execute(1, func(p *prompt.Prompt) error { _, s = prompt.State(p, "n", 1); return nil })
		return s
	}()
	set.Set(context.Background(), 5)
	if n, err := prompt.GetState[int](context.Background(), p, "n"); err != nil || n != 5 {
		t.Errorf("GetState = %d, %v; want 5", n, err)
	}
}

func TestPromptPanicIsErrorWithSiteAndStep(t *testing.T) {
	p := prompt.New("")
	var site string
	_, err := p.Execute(3, func(p *prompt.Prompt) error {
		p.Def("x", "1")
		site = next()
		panic("kaput")
	})
	var pe *prompt.Error
	if !errors.As(err, &pe) {
		t.Fatalf("Execute = %v, want *prompt.Error", err)
	}
	if !pe.Panicked || pe.Step != 3 || pe.Site != site || pe.Err.Error() != "kaput" {
		t.Errorf("Error = %+v, want panic at %s at step 3", pe, site)
	}
	// The message is the contract here: it names the user's call site.
	if !strings.Contains(err.Error(), site) {
		t.Errorf("error %q does not name the site %s", err, site)
	}
	// The prompt is usable again after a panic.
	if _, err := p.Execute(4, func(p *prompt.Prompt) error { p.Def("x", "2"); return nil }); err != nil {
		t.Errorf("Execute after a panic: %v", err)
	}
}

func TestPromptPanicWithError(t *testing.T) {
	sentinel := errors.New("sentinel")
	_, err := prompt.New("").Execute(0, func(*prompt.Prompt) error { panic(sentinel) })
	if !errors.Is(err, sentinel) {
		t.Errorf("Execute = %v, want it to wrap the panic's error", err)
	}
}

func TestPromptReturnedError(t *testing.T) {
	sentinel := errors.New("no input")
	_, err := prompt.New("").Execute(2, func(*prompt.Prompt) error { return sentinel })
	var pe *prompt.Error
	if !errors.As(err, &pe) || !errors.Is(err, sentinel) {
		t.Fatalf("Execute = %v, want *prompt.Error wrapping the returned error", err)
	}
	if pe.Panicked || pe.Site != "" || pe.Step != 2 {
		t.Errorf("Error = %+v", pe)
	}
	// The message is the contract here: a returned error is reported
	// whole, after the step.
	if want := "prompt function failed at step 2: no input"; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err, want)
	}
}

func TestStateWrongTypeNamesSiteAndTypes(t *testing.T) {
	p := prompt.New("")
	var site string
	_, err := p.Execute(1, func(p *prompt.Prompt) error {
		prompt.State(p, "count", 0)
		site = next()
		prompt.State(p, "count", "zero")
		return nil
	})
	var pe *prompt.Error
	var me *prompt.MisuseError
	var te *state.TypeError
	if !errors.As(err, &pe) || !errors.As(err, &me) || !errors.As(err, &te) {
		t.Fatalf("Execute = %v, want *prompt.Error wrapping *prompt.MisuseError wrapping *state.TypeError", err)
	}
	if pe.Site != site || me.Hook != "State" || te.Have != "int" || te.Want != "string" || pe.Step != 1 {
		t.Errorf("got site %q hook %q have %q want %q step %d", pe.Site, me.Hook, te.Have, te.Want, pe.Step)
	}
	if te.Key != "count" {
		t.Errorf("TypeError.Key = %q, want count", te.Key)
	}
	// The message is the contract here: it names the user's call site.
	if !strings.Contains(err.Error(), site) {
		t.Errorf("error %q does not name the site %s", err, site)
	}
}

func TestStateAcrossExecutions(t *testing.T) {
	p := prompt.New("")
	var seen []int
	var setter state.Setter[int]
	fn := func(p *prompt.Prompt) error {
		n, set := prompt.State(p, "n", 10)
		again, _ := prompt.State(p, "n", 99) // same key, same value; initial ignored
		if again != n {
			return fmt.Errorf("two reads of n disagree: %d, %d", n, again)
		}
		seen, setter = append(seen, n), set
		return nil
	}
	for step := range 3 {
		if _, err := p.Execute(step, fn); err != nil {
			t.Fatal(err)
		}
		setter.Update(context.Background(), func(n int) int { return n + 1 })
		if live, _ := prompt.GetState[int](context.Background(), p, "n"); live != seen[len(seen)-1]+1 {
			t.Errorf("GetState = %d right after the update, want %d", live, seen[len(seen)-1]+1)
		}
	}
	if diff := cmp.Diff([]int{10, 11, 12}, seen); diff != "" {
		t.Errorf("values seen mismatch (-want +got):\n%s", diff)
	}
	if _, err := prompt.GetState[string](context.Background(), p, "n"); err == nil {
		t.Error("GetState with the wrong type returned no error")
	}
	if _, err := prompt.GetState[int](context.Background(), p, "missing"); err == nil {
		t.Error("GetState of a missing key returned no error")
	}
}

func TestExecuteReconcilesDefinitions(t *testing.T) {
	p := prompt.New("")
	for step := range 2 {
		_, err := p.Execute(step, func(p *prompt.Prompt) error {
			p.DefSystem("role", "r")
			if step == 0 {
				p.Def("onboarding", "yes")
			}
			p.DefData("cfg", map[string]int{"a": step})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"cfg"}, p.Registry().Collection(defs.KindVariable).Names()); diff != "" {
		t.Errorf("variables mismatch (-want +got):\n%s", diff)
	}
	d, _ := p.Registry().Lookup(defs.KindVariable, "cfg")
	if diff := cmp.Diff(map[string]int{"a": 1}, d.Data); !d.IsData || diff != "" {
		t.Errorf("cfg = %+v (-want +got):\n%s", d, diff)
	}
	if p.Step() != 1 {
		t.Errorf("Step() = %d, want 1", p.Step())
	}
}

func TestDefMessageAddedOnce(t *testing.T) {
	p := prompt.New("")
	fn := func(p *prompt.Prompt) error {
		p.DefMessage(defs.RoleSystem, "be brief")
		p.User("hello")
		p.DefMessage(defs.RoleAssistant, "hello")  // same text, other role: another message
		p.DefMessage(defs.RoleAssistant, "hello")  // same text, another call site: another message
		p.User(fmt.Sprintf("step %d", p.Step()%2)) // its text changes: still one message
		return nil
	}
	var got [][]defs.Message
	for step := range 4 {
		added, err := p.Execute(step, fn)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, slices.Clone(added))
	}
	want := [][]defs.Message{
		{
			{Role: defs.RoleSystem, Content: "be brief"},
			{Role: defs.RoleUser, Content: "hello"},
			{Role: defs.RoleAssistant, Content: "hello"},
			{Role: defs.RoleAssistant, Content: "hello"},
			{Role: defs.RoleUser, Content: "step 0"},
		},
		{},
		{},
		{},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("added messages mismatch (-want +got):\n%s", diff)
	}

	// A resumed prompt told what was added does not add it again.
	r := prompt.New("")
	r.MarkMessagesSeen(p.SeenMessages())
	added, err := r.Execute(0, fn)
	if err != nil || len(added) != 0 {
		t.Errorf("resumed Execute added %v, %v; want nothing", added, err)
	}
	if prompt.MessageID(defs.RoleUser, "a") == prompt.MessageID(defs.RoleAssistant, "a") {
		t.Error("MessageID ignores the role")
	}
}

type searchArgs struct {
	Query string   `json:"query" jsonschema:"what to look for"`
	Limit int      `json:"limit,omitempty" jsonschema:"at most this many results"`
	Tags  []string `json:"tags,omitempty"`
}

type hit struct {
	Title string `json:"title"`
	Rank  int    `json:"rank"`
}

// declare executes fn once on a fresh prompt and returns the tool named name.
func declare(t *testing.T, fn prompt.Func, name string) *defs.Tool {
	t.Helper()
	p := prompt.New("")
	if _, err := p.Execute(0, fn); err != nil {
		t.Fatal(err)
	}
	d, ok := p.Registry().Lookup(defs.KindTool, name)
	if !ok {
		t.Fatalf("tool %q not declared", name)
	}
	return d.Tool
}

func TestDefToolSchemaFromStruct(t *testing.T) {
	var h defs.Handle
	tool := declare(t, func(p *prompt.Prompt) error {
		h = prompt.DefTool(p, "search", "Search the docs.", func(_ context.Context, a searchArgs) ([]hit, error) {
			return []hit{{Title: a.Query, Rank: a.Limit}}, nil
		})
		return nil
	}, "search")
	if h.Tag() != "<search>" || h.Kind() != defs.KindTool {
		t.Errorf("handle = %v %v", h.Kind(), h)
	}
	if tool.Name != "search" || tool.Description != "Search the docs." || tool.Agent {
		t.Errorf("tool = %+v", tool)
	}
	var schema struct {
		Type       string   `json:"type"`
		Required   []string `json:"required"`
		Properties map[string]struct {
			Type        any    `json:"type"`
			Description string `json:"description"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(tool.Schema, &schema); err != nil {
		t.Fatalf("schema %s: %v", tool.Schema, err)
	}
	if schema.Type != "object" {
		t.Errorf("schema type = %q, want object", schema.Type)
	}
	if diff := cmp.Diff([]string{"query"}, schema.Required); diff != "" {
		t.Errorf("required mismatch (-want +got):\n%s", diff)
	}
	descs := map[string]string{}
	for name, prop := range schema.Properties {
		descs[name] = prop.Description
	}
	want := map[string]string{"query": "what to look for", "limit": "at most this many results", "tags": ""}
	if diff := cmp.Diff(want, descs); diff != "" {
		t.Errorf("property descriptions mismatch (-want +got):\n%s\nschema: %s", diff, tool.Schema)
	}

	out, err := tool.Call(context.Background(), json.RawMessage(`{"query":"go","limit":2}`))
	if err != nil || out != `[{"title":"go","rank":2}]` {
		t.Errorf("Call = %q, %v; want the result as JSON", out, err)
	}
}

func TestDefToolArgumentsValidation(t *testing.T) {
	tool := declare(t, func(p *prompt.Prompt) error {
		prompt.DefTool(p, "search", "d", func(_ context.Context, a searchArgs) (string, error) { return a.Query, nil })
		return nil
	}, "search")
	tests := []struct {
		name    string
		args    string
		wantErr string // "" for valid arguments
	}{
		{"valid", `{"query":"x"}`, ""},
		{"valid with optional", `{"query":"x","limit":3,"tags":["a"]}`, ""},
		{"missing required", `{"limit":3}`, "query"},
		{"wrong type", `{"query":5}`, "query"},
		{"wrong element type", `{"query":"x","tags":[1]}`, "tags"},
		{"not JSON", `{"query":`, "not valid JSON"},
		{"not an object", `["x"]`, "object"},
		{"unknown field", `{"query":"x","extra":1}`, "extra"},
		{"empty means {}", ``, "query"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tool.Validate(json.RawMessage(tt.args))
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("Validate(%s) = %v, want nil", tt.args, err)
				}
				return
			}
			var ae *prompt.ArgumentsError
			if !errors.As(err, &ae) || !prompt.IsArgumentsError(err) {
				t.Fatalf("Validate(%s) = %v, want *prompt.ArgumentsError", tt.args, err)
			}
			if ae.Tool != "search" {
				t.Errorf("ArgumentsError.Tool = %q, want search", ae.Tool)
			}
			// The text is what the model reads to fix its call (the schema
			// library's errors are untyped): it must name what is wrong.
			if !strings.Contains(ae.Err.Error(), tt.wantErr) {
				t.Errorf("Validate(%s) = %q, want it to name %q", tt.args, err, tt.wantErr)
			}
		})
	}
	if prompt.IsArgumentsError(errors.New("x")) {
		t.Error("IsArgumentsError(plain error) = true")
	}
}

func TestDefToolCallResults(t *testing.T) {
	boom := errors.New("boom")
	var tools map[string]*defs.Tool
	p := prompt.New("")
	_, err := p.Execute(0, func(p *prompt.Prompt) error {
		prompt.DefTool(p, "text", "d", func(context.Context, struct{}) (string, error) { return "plain \"text\"", nil })
		prompt.DefTool(p, "num", "d", func(context.Context, map[string]any) (int, error) { return 42, nil })
		prompt.DefTool(p, "fail", "d", func(context.Context, struct{}) (string, error) { return "ignored", boom })
		prompt.DefTool(p, "unencodable", "d", func(context.Context, struct{}) (func(), error) { return func() {}, nil })
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	tools = map[string]*defs.Tool{}
	for d := range p.Registry().Collection(defs.KindTool).All() {
		tools[d.Name] = d.Tool
	}
	call := func(name string) (string, error) {
		return tools[name].Call(context.Background(), json.RawMessage(`{}`))
	}
	if out, err := call("text"); out != `plain "text"` || err != nil {
		t.Errorf("text = %q, %v; a string result is sent as is", out, err)
	}
	if out, err := call("num"); out != "42" || err != nil {
		t.Errorf("num = %q, %v", out, err)
	}
	if out, err := call("fail"); !errors.Is(err, boom) || out != "" {
		t.Errorf("fail = %q, %v; want the tool's error", out, err)
	}
	var ue *json.UnsupportedTypeError
	if _, err := call("unencodable"); !errors.As(err, &ue) {
		t.Errorf("unencodable = %v, want a *json.UnsupportedTypeError", err)
	}
	if tools["num"].Validate(json.RawMessage(`{"anything":[1]}`)) != nil {
		t.Error("a map-typed tool rejected an object")
	}
}

func TestDefToolNonObjectArgumentsIsMisuse(t *testing.T) {
	tests := []struct {
		name string
		decl func(p *prompt.Prompt)
	}{
		{"int", func(p *prompt.Prompt) {
			prompt.DefTool(p, "bad", "d", func(context.Context, int) (string, error) { return "", nil })
		}},
		{"slice", func(p *prompt.Prompt) {
			prompt.DefTool(p, "bad", "d", func(context.Context, []string) (string, error) { return "", nil })
		}},
		{"func", func(p *prompt.Prompt) {
			prompt.DefTool(p, "bad", "d", func(context.Context, func()) (string, error) { return "", nil })
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var site string
			_, err := prompt.New("").Execute(0, func(p *prompt.Prompt) error {
				site = next()
				tt.decl(p)
				return nil
			})
			var pe *prompt.Error
			var me *prompt.MisuseError
			if !errors.As(err, &pe) || !errors.As(err, &me) {
				t.Fatalf("Execute = %v, want *prompt.Error wrapping *prompt.MisuseError", err)
			}
			if me.Hook != "DefTool bad" || pe.Panicked {
				t.Errorf("MisuseError = %+v, Panicked = %v", me, pe.Panicked)
			}
			// The site is the DefTool call inside decl, in this file.
			if !strings.HasPrefix(me.Site, "prompt_test.go:") || me.Site == site {
				t.Errorf("site = %q, want the DefTool line in prompt_test.go", me.Site)
			}
		})
	}
}

func TestEffectHookOrderSurfacesFromExecute(t *testing.T) {
	p := prompt.New("")
	var condSite, mainSite string
	fn := func(cond bool) prompt.Func {
		return func(p *prompt.Prompt) error {
			if cond {
				condSite = next()
				p.Effect(effects.Once, func(context.Context, *effects.Step) error { return nil })
			}
			mainSite = next()
			p.Effect(effects.Always, func(context.Context, *effects.Step) error { return nil })
			return nil
		}
	}
	if _, err := p.Execute(0, fn(true)); err != nil {
		t.Fatal(err)
	}
	_, err := p.Execute(1, fn(false))
	var he *effects.HookOrderError
	var pe *prompt.Error
	if !errors.As(err, &pe) || !errors.As(err, &he) {
		t.Fatalf("Execute = %v, want *prompt.Error wrapping *effects.HookOrderError", err)
	}
	if he.Was != condSite || he.Now != mainSite || pe.Step != 1 {
		t.Errorf("HookOrderError = %+v at step %d, want was %s now %s at step 1", he, pe.Step, condSite, mainSite)
	}
}

type fakeRunner struct {
	name, task string
}

func (f *fakeRunner) RunAgent(_ context.Context, name string, fn prompt.Func, task string) (string, error) {
	f.name, f.task = name, task
	return "answer", nil
}

func TestDefAgent(t *testing.T) {
	tool := declare(t, func(p *prompt.Prompt) error {
		p.DefAgent("researcher", "Researches.", func(*prompt.Prompt) error { return nil })
		return nil
	}, "researcher")
	if !tool.Agent || tool.Description != "Researches." {
		t.Errorf("tool = %+v", tool)
	}
	if err := tool.Validate(json.RawMessage(`{}`)); !prompt.IsArgumentsError(err) {
		t.Errorf("Validate({}) = %v, want an *ArgumentsError (task is required)", err)
	}
	args := json.RawMessage(`{"task":"find x"}`)
	if _, err := tool.Call(context.Background(), args); !errors.Is(err, prompt.ErrNoAgentRunner) {
		t.Errorf("Call without runner = %v, want ErrNoAgentRunner", err)
	}
	r := &fakeRunner{}
	out, err := tool.Call(prompt.WithAgentRunner(context.Background(), r), args)
	if err != nil || out != "answer" || r.name != "researcher" || r.task != "find x" {
		t.Errorf("Call = %q, %v; runner saw %+v", out, err, r)
	}
	if in := prompt.New("the task").Input(); in != "the task" {
		t.Errorf("Input() = %q", in)
	}
}

func TestAccessors(t *testing.T) {
	p := prompt.New("")
	if p.Registry() == nil || p.Store() == nil || p.Effects() == nil || p.Input() != "" {
		t.Error("a new prompt lacks its parts")
	}
}
