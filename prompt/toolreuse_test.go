package prompt_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/prompt"
)

func staticTool(context.Context, struct{}) (string, error) { return "static", nil }

// toolsOf executes fn as steps 0..n-1 of one prompt and returns the tool
// named name as each execution declared it, and what each returned when
// called after its execution ("" when there is none, or it is an agent),
// as the runtime calls the tools a step offered before the next execution.
func toolsOf(t *testing.T, n int, name string, fn func(p *prompt.Prompt, step int)) ([]*defs.Tool, []string) {
	t.Helper()
	p := prompt.New("")
	var out []*defs.Tool
	var results []string
	for step := range n {
		_, err := p.Execute(step, func(p *prompt.Prompt) error { fn(p, step); return nil })
		require.NoError(t, err)
		d, ok := p.Registry().Lookup(defs.KindTool, name)
		if !ok {
			out, results = append(out, nil), append(results, "")
			continue
		}
		out = append(out, d.Tool)
		res := ""
		if !d.Tool.Agent {
			res = callTool(t, d.Tool)
		}
		results = append(results, res)
	}
	return out, results
}

func callTool(t *testing.T, tool *defs.Tool) string {
	t.Helper()
	out, err := tool.Call(context.Background(), json.RawMessage(`{}`))
	require.NoError(t, err)
	return out
}

// A tool declared again with the same name, description, schema, options
// and function type is the same *defs.Tool, whatever its function values;
// any other difference makes a new one. Either way a call runs the
// function given at the execution that declared the tool last.
func TestToolDeclaredAgainUnchangedIsReused(t *testing.T) {
	kept := func(context.Context, struct{}) (string, error) { return "kept", nil }
	tests := []struct {
		name string
		decl func(p *prompt.Prompt, step int)
		same []bool // whether step i's tool is step i-1's
		want []string
	}{
		{"package-level function", func(p *prompt.Prompt, _ int) {
			prompt.DefTool(p, "t", "d", staticTool)
		}, []bool{true, true}, []string{"static", "static", "static"}},
		{"closure made once", func(p *prompt.Prompt, _ int) {
			prompt.DefTool(p, "t", "d", kept)
		}, []bool{true, true}, []string{"kept", "kept", "kept"}},
		{"closure capturing nothing", func(p *prompt.Prompt, _ int) {
			prompt.DefTool(p, "t", "d", func(context.Context, struct{}) (string, error) { return "lit", nil })
		}, []bool{true, true}, []string{"lit", "lit", "lit"}},
		{"closure capturing the step", func(p *prompt.Prompt, step int) {
			prompt.DefTool(p, "t", "d", func(context.Context, struct{}) (int, error) { return step, nil })
		}, []bool{true, true}, []string{"0", "1", "2"}},
		{"result type changes", func(p *prompt.Prompt, step int) {
			if step == 1 {
				prompt.DefTool(p, "t", "d", func(context.Context, struct{}) (int, error) { return step, nil })
				return
			}
			prompt.DefTool(p, "t", "d", staticTool)
		}, []bool{false, false}, []string{"static", "1", "static"}},
		{"description changes", func(p *prompt.Prompt, step int) {
			prompt.DefTool(p, "t", []string{"a", "a", "b"}[step], staticTool)
		}, []bool{true, false}, []string{"static", "static", "static"}},
		{"idempotent at one step", func(p *prompt.Prompt, step int) {
			var opts []prompt.ToolOption
			if step == 1 {
				opts = append(opts, prompt.Idempotent())
			}
			prompt.DefTool(p, "t", "d", staticTool, opts...)
		}, []bool{false, false}, []string{"static", "static", "static"}},
		{"needs approval", func(p *prompt.Prompt, _ int) {
			prompt.DefTool(p, "t", "d", staticTool, prompt.NeedsApproval())
		}, []bool{true, true}, []string{"static", "static", "static"}},
		{"needs approval if", func(p *prompt.Prompt, _ int) {
			prompt.DefTool(p, "t", "d", staticTool, prompt.NeedsApprovalIf(func(struct{}) bool { return true }))
		}, []bool{true, true}, []string{"static", "static", "static"}},
		{"approval at one step", func(p *prompt.Prompt, step int) {
			var opts []prompt.ToolOption
			if step == 1 {
				opts = append(opts, prompt.NeedsApproval())
			}
			prompt.DefTool(p, "t", "d", staticTool, opts...)
		}, []bool{false, false}, []string{"static", "static", "static"}},
		{"schema tool", func(p *prompt.Prompt, _ int) {
			p.DefSchemaTool("t", "d", json.RawMessage(`{"type":"object"}`), func(context.Context, json.RawMessage) (string, error) { return "schema", nil })
		}, []bool{true, true}, []string{"schema", "schema", "schema"}},
		{"schema tool then typed tool", func(p *prompt.Prompt, step int) {
			if step == 1 {
				prompt.DefTool(p, "t", "d", staticTool)
				return
			}
			p.DefSchemaTool("t", "d", json.RawMessage(`{"type":"object"}`), func(context.Context, json.RawMessage) (string, error) { return "schema", nil })
		}, []bool{false, false}, []string{"schema", "static", "schema"}},
		{"agent in between", func(p *prompt.Prompt, step int) {
			if step == 1 {
				p.DefAgent("t", "d", func(*prompt.Prompt) error { return nil })
				return
			}
			prompt.DefTool(p, "t", "d", staticTool)
		}, []bool{false, false}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tools, results := toolsOf(t, 3, "t", tt.decl)
			for i, same := range tt.same {
				assert.Equal(t, same, tools[i] == tools[i+1], "step %d's tool is step %d's", i+1, i)
			}
			for i, want := range tt.want {
				assert.Equal(t, want, results[i], "step %d", i)
			}
		})
	}
}

// A tool not declared at one execution is made anew when declared again.
func TestToolDeclaredAfterAGapIsNew(t *testing.T) {
	tools, _ := toolsOf(t, 3, "t", func(p *prompt.Prompt, step int) {
		if step != 1 {
			prompt.DefTool(p, "t", "d", staticTool)
		}
	})
	require.NotNil(t, tools[0])
	assert.Nil(t, tools[1])
	require.NotNil(t, tools[2])
	assert.NotSame(t, tools[0], tools[2])
	assert.Equal(t, "static", callTool(t, tools[2]))
}

// Declaring an unchanged tool again allocates nothing.
func TestToolDeclaredAgainAllocatesNothing(t *testing.T) {
	p := prompt.New("")
	fn := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "t", "d", staticTool)
		return nil
	}
	_, err := p.Execute(0, fn)
	require.NoError(t, err)
	step := 1
	allocs := testing.AllocsPerRun(100, func() {
		_, err := p.Execute(step, fn)
		require.NoError(t, err, "Execute")
		step++
	})
	assert.Equal(t, 0.0, allocs)
}

// A tool replaced by another at one execution is made anew when declared
// again, while the tools declared throughout are kept.
func TestToolSwappedOutIsForgotten(t *testing.T) {
	p := prompt.New("")
	names := [][]string{{"a", "b"}, {"a", "c"}, {"a", "b"}}
	var got []map[string]*defs.Tool
	for step, decl := range names {
		_, err := p.Execute(step, func(p *prompt.Prompt) error {
			for _, n := range decl {
				prompt.DefTool(p, n, "d", staticTool)
			}
			return nil
		})
		require.NoError(t, err)
		m := map[string]*defs.Tool{}
		for _, n := range decl {
			d, ok := p.Registry().Lookup(defs.KindTool, n)
			require.True(t, ok)
			m[n] = d.Tool
		}
		got = append(got, m)
	}
	assert.Same(t, got[0]["a"], got[1]["a"])
	assert.Same(t, got[1]["a"], got[2]["a"])
	assert.NotSame(t, got[0]["b"], got[2]["b"], "b was not declared at step 1")
}

// TestToolReuseComparesEveryOption fails when toolOptions gains a field:
// sameTool must then compare it, or a tool declared again with only that
// option changed would keep the old one.
func TestToolReuseComparesEveryOption(t *testing.T) {
	assert.Equal(t, 3, prompt.ToolOptionFields, "compare the new option in sameTool (prompt/toolreuse.go), then update this count")
}

// A closure made anew at every execution (it captures the step) and an
// approval decision that does are declared again without allocating a
// new tool, and a call runs this execution's function and decision.
func TestToolWithNewClosuresAllocatesNothing(t *testing.T) {
	p := prompt.New("")
	step := 0
	fn := func(p *prompt.Prompt) error {
		n := step
		prompt.DefTool(p, "t", "d", func(context.Context, struct{}) (int, error) { return n, nil },
			prompt.NeedsApprovalIf(func(struct{}) bool { return n%2 == 0 }))
		return nil
	}
	_, err := p.Execute(step, fn)
	require.NoError(t, err)
	first, _ := p.Registry().Lookup(defs.KindTool, "t")
	allocs := testing.AllocsPerRun(100, func() {
		step++
		_, err := p.Execute(step, fn)
		require.NoError(t, err, "Execute")
	})
	d, _ := p.Registry().Lookup(defs.KindTool, "t")
	assert.Same(t, first.Tool, d.Tool, "the tool is reused")
	assert.Equal(t, strconv.Itoa(step), callTool(t, d.Tool), "the call runs the last execution's closure")
	need, err := d.Tool.NeedsApproval(json.RawMessage(`{}`))
	require.NoError(t, err)
	assert.Equal(t, step%2 == 0, need, "the last execution's approval decision")
	// The user's: the two closures, n (which both capture), NeedsApprovalIf's
	// decision and option, and the variadic slice of options. The tool adds
	// none (it added 2 when a new closure made a new tool).
	assert.Equal(t, 6.0, allocs)

	bare := func(p *prompt.Prompt) error {
		n := step
		prompt.DefTool(p, "t", "d", func(context.Context, struct{}) (int, error) { return n, nil })
		return nil
	}
	allocs = testing.AllocsPerRun(100, func() {
		step++
		_, err := p.Execute(step, bare)
		require.NoError(t, err, "Execute")
	})
	assert.Equal(t, 1.0, allocs, "the closure alone (3 when it made a new tool)")
}
