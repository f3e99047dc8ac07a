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
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	_, err := p.Execute(0, func(*prompt.Prompt) error { return nil })
	require.NoError(t, err, "Execute")
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
			require.True(t, ok, "panic value = %#v, want *prompt.MisuseError", v)
			assert.Equal(t, h.hook, me.Hook, "MisuseError.Hook")
			assert.Equal(t, site, me.Site, "MisuseError.Site")
			// The message is the contract here: it names the user's call
			// site and the mistake (errOutside is not exported).
			assert.Contains(t, me.Error(), site, "the error does not name the misuse's site")
			assert.Contains(t, me.Error(), "outside the prompt function", "the error does not explain the misuse")
		})
	}
	// Setters and GetState may be used at any time.
	set := func() state.Setter[int] {
		var s state.Setter[int]
		_, _ = p.Execute(1, func(p *prompt.Prompt) error { _, s = prompt.State(p, "n", 1); return nil })
		return s
	}()
	set.Set(context.Background(), 5)
	n, err := prompt.GetState[int](context.Background(), p, "n")
	assert.NoError(t, err, "GetState")
	assert.Equal(t, 5, n, "GetState")
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
	require.ErrorAs(t, err, &pe, "Execute")
	assert.True(t, pe.Panicked, "Error.Panicked")
	assert.Equal(t, 3, pe.Step, "Error.Step")
	assert.Equal(t, site, pe.Site, "Error.Site")
	assert.EqualError(t, pe.Err, "kaput", "Error.Err")
	// The message is the contract here: it names the user's call site.
	assert.Contains(t, err.Error(), site, "the error does not name the site")
	// The prompt is usable again after a panic.
	_, err = p.Execute(4, func(p *prompt.Prompt) error { p.Def("x", "2"); return nil })
	assert.NoError(t, err, "Execute after a panic")
}

func TestPromptPanicWithError(t *testing.T) {
	sentinel := errors.New("sentinel")
	_, err := prompt.New("").Execute(0, func(*prompt.Prompt) error { panic(sentinel) })
	assert.ErrorIs(t, err, sentinel, "Execute: want it to wrap the panic's error")
}

func TestPromptReturnedError(t *testing.T) {
	sentinel := errors.New("no input")
	_, err := prompt.New("").Execute(2, func(*prompt.Prompt) error { return sentinel })
	var pe *prompt.Error
	require.ErrorAs(t, err, &pe, "Execute")
	require.ErrorIs(t, err, sentinel, "Execute: want it to wrap the returned error")
	assert.False(t, pe.Panicked, "Error.Panicked")
	assert.Empty(t, pe.Site, "Error.Site")
	assert.Equal(t, 2, pe.Step, "Error.Step")
	// The message is the contract here: a returned error is reported
	// whole, after the step.
	assert.EqualError(t, err, "prompt function failed at step 2: no input", "Error()")
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
	// Want *prompt.Error wrapping *prompt.MisuseError wrapping *state.TypeError.
	require.ErrorAs(t, err, &pe, "Execute")
	require.ErrorAs(t, err, &me, "Execute")
	require.ErrorAs(t, err, &te, "Execute")
	assert.Equal(t, site, pe.Site, "Error.Site")
	assert.Equal(t, "State", me.Hook, "MisuseError.Hook")
	assert.Equal(t, "int", te.Have, "TypeError.Have")
	assert.Equal(t, "string", te.Want, "TypeError.Want")
	assert.Equal(t, 1, pe.Step, "Error.Step")
	assert.Equal(t, "count", te.Key, "TypeError.Key")
	// The message is the contract here: it names the user's call site.
	assert.Contains(t, err.Error(), site, "the error does not name the site")
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
		_, err := p.Execute(step, fn)
		require.NoError(t, err, "Execute(%d)", step)
		setter.Update(context.Background(), func(n int) int { return n + 1 })
		live, _ := prompt.GetState[int](context.Background(), p, "n")
		assert.Equal(t, seen[len(seen)-1]+1, live, "GetState right after the update")
	}
	assert.Empty(t, cmp.Diff([]int{10, 11, 12}, seen), "values seen mismatch (-want +got)")
	_, err := prompt.GetState[string](context.Background(), p, "n")
	assert.Error(t, err, "GetState with the wrong type returned no error")
	_, err = prompt.GetState[int](context.Background(), p, "missing")
	assert.Error(t, err, "GetState of a missing key returned no error")
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
		require.NoError(t, err, "Execute(%d)", step)
	}
	assert.Empty(t, cmp.Diff([]string{"cfg"}, p.Registry().Collection(defs.KindVariable).Names()), "variables mismatch (-want +got)")
	d, _ := p.Registry().Lookup(defs.KindVariable, "cfg")
	assert.True(t, d.IsData, "cfg: IsData")
	assert.Empty(t, cmp.Diff(map[string]int{"a": 1}, d.Data), "cfg data mismatch (-want +got)")
	assert.Equal(t, 1, p.Step(), "Step()")
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
		require.NoError(t, err, "Execute(%d)", step)
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
	assert.Empty(t, cmp.Diff(want, got), "added messages mismatch (-want +got)")

	// A resumed prompt told what was added does not add it again.
	r := prompt.New("")
	r.MarkMessagesSeen(p.SeenMessages())
	added, err := r.Execute(0, fn)
	assert.NoError(t, err, "resumed Execute")
	assert.Empty(t, added, "resumed Execute added messages")
	assert.NotEqual(t, prompt.MessageID(defs.RoleUser, "a"), prompt.MessageID(defs.RoleAssistant, "a"), "MessageID ignores the role")
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
	_, err := p.Execute(0, fn)
	require.NoError(t, err, "Execute")
	d, ok := p.Registry().Lookup(defs.KindTool, name)
	require.True(t, ok, "tool %q not declared", name)
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
	assert.Equal(t, "<search>", h.Tag(), "handle Tag()")
	assert.Equal(t, defs.KindTool, h.Kind(), "handle Kind()")
	assert.Equal(t, "search", tool.Name, "tool.Name")
	assert.Equal(t, "Search the docs.", tool.Description, "tool.Description")
	assert.False(t, tool.Agent, "tool.Agent")
	var schema struct {
		Type       string   `json:"type"`
		Required   []string `json:"required"`
		Properties map[string]struct {
			Type        any    `json:"type"`
			Description string `json:"description"`
		} `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(tool.Schema, &schema), "schema %s", tool.Schema)
	assert.Equal(t, "object", schema.Type, "schema type")
	assert.Empty(t, cmp.Diff([]string{"query"}, schema.Required), "required mismatch (-want +got)")
	descs := map[string]string{}
	for name, prop := range schema.Properties {
		descs[name] = prop.Description
	}
	want := map[string]string{"query": "what to look for", "limit": "at most this many results", "tags": ""}
	assert.Empty(t, cmp.Diff(want, descs), "property descriptions of schema %s mismatch (-want +got)", tool.Schema)

	out, err := tool.Call(context.Background(), json.RawMessage(`{"query":"go","limit":2}`))
	assert.NoError(t, err, "Call")
	assert.Equal(t, `[{"title":"go","rank":2}]`, out, "Call: want the result as JSON")
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
				assert.NoError(t, err, "Validate(%s)", tt.args)
				return
			}
			var ae *prompt.ArgumentsError
			require.ErrorAs(t, err, &ae, "Validate(%s)", tt.args)
			require.True(t, prompt.IsArgumentsError(err), "IsArgumentsError(Validate(%s))", tt.args)
			assert.Equal(t, "search", ae.Tool, "ArgumentsError.Tool")
			// The text is what the model reads to fix its call (the schema
			// library's errors are untyped): it must name what is wrong.
			assert.Contains(t, ae.Err.Error(), tt.wantErr, "Validate(%s): the error does not name what is wrong", tt.args)
		})
	}
	assert.False(t, prompt.IsArgumentsError(errors.New("x")), "IsArgumentsError(plain error)")
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
	require.NoError(t, err, "Execute")
	tools = map[string]*defs.Tool{}
	for d := range p.Registry().Collection(defs.KindTool).All() {
		tools[d.Name] = d.Tool
	}
	call := func(name string) (string, error) {
		return tools[name].Call(context.Background(), json.RawMessage(`{}`))
	}
	out, err := call("text")
	assert.Equal(t, `plain "text"`, out, "text: a string result is sent as is")
	assert.NoError(t, err, "text")
	out, err = call("num")
	assert.Equal(t, "42", out, "num")
	assert.NoError(t, err, "num")
	out, err = call("fail")
	assert.ErrorIs(t, err, boom, "fail: want the tool's error")
	assert.Empty(t, out, "fail: the result with the tool's error")
	var ue *json.UnsupportedTypeError
	_, err = call("unencodable")
	assert.ErrorAs(t, err, &ue, "unencodable")
	assert.NoError(t, tools["num"].Validate(json.RawMessage(`{"anything":[1]}`)), "a map-typed tool rejected an object")
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
			// Want *prompt.Error wrapping *prompt.MisuseError.
			require.ErrorAs(t, err, &pe, "Execute")
			require.ErrorAs(t, err, &me, "Execute")
			assert.Equal(t, "DefTool bad", me.Hook, "MisuseError.Hook")
			assert.False(t, pe.Panicked, "Error.Panicked")
			// The site is the DefTool call inside decl, in this file.
			assert.True(t, strings.HasPrefix(me.Site, "prompt_test.go:"), "site = %q, want the DefTool line in prompt_test.go", me.Site)
			assert.NotEqual(t, site, me.Site, "site is the call of decl, want the DefTool line inside it")
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
	_, err := p.Execute(0, fn(true))
	require.NoError(t, err, "Execute(0)")
	_, err = p.Execute(1, fn(false))
	var he *effects.HookOrderError
	var pe *prompt.Error
	// Want *prompt.Error wrapping *effects.HookOrderError.
	require.ErrorAs(t, err, &pe, "Execute(1)")
	require.ErrorAs(t, err, &he, "Execute(1)")
	assert.Equal(t, condSite, he.Was, "HookOrderError.Was")
	assert.Equal(t, mainSite, he.Now, "HookOrderError.Now")
	assert.Equal(t, 1, pe.Step, "Error.Step")
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
	assert.True(t, tool.Agent, "tool.Agent")
	assert.Equal(t, "Researches.", tool.Description, "tool.Description")
	assert.True(t, prompt.IsArgumentsError(tool.Validate(json.RawMessage(`{}`))), "Validate({}): want an *ArgumentsError (task is required)")
	args := json.RawMessage(`{"task":"find x"}`)
	_, err := tool.Call(context.Background(), args)
	assert.ErrorIs(t, err, prompt.ErrNoAgentRunner, "Call without runner")
	r := &fakeRunner{}
	out, err := tool.Call(prompt.WithAgentRunner(context.Background(), r), args)
	assert.NoError(t, err, "Call")
	assert.Equal(t, "answer", out, "Call")
	assert.Equal(t, "researcher", r.name, "agent name the runner saw")
	assert.Equal(t, "find x", r.task, "task the runner saw")
	assert.Equal(t, "the task", prompt.New("the task").Input(), "Input()")
}

func TestAccessors(t *testing.T) {
	p := prompt.New("")
	// A new prompt has its parts.
	assert.NotNil(t, p.Registry(), "Registry()")
	assert.NotNil(t, p.Store(), "Store()")
	assert.NotNil(t, p.Effects(), "Effects()")
	assert.Empty(t, p.Input(), "Input()")
}
