package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/snapshots"
)

type summary struct {
	Title  string   `json:"title"`
	Points []string `json:"points"`
}

// summarizer declares its typed answer from the step after the lookup
// tool ran: until then the model works with its tools.
func summarizer(p *prompt.Prompt) error {
	looked, setLooked := prompt.State(p, "looked", false)
	prompt.DefTool(p, "lookup", "Look something up.", func(ctx context.Context, _ struct{}) (string, error) {
		setLooked.Set(ctx, true)
		return "facts", nil
	})
	if looked {
		prompt.DefOutput[summary](p, "summary", "The summary.")
	}
	p.User("Summarize.")
	return nil
}

func TestOutputDeclaredPerStep(t *testing.T) {
	for _, mode := range []llm.OutputMode{llm.OutputTool, llm.OutputNative} {
		t.Run(string(mode), func(t *testing.T) {
			model := snapshots.Script(
				snapshots.CallTool("lookup", nil),
				snapshots.Answer(summary{Title: "T", Points: []string{"a"}}),
			)
			res, err := runtime.Run(context.Background(), model, summarizer, runtime.Config{OutputMode: mode})
			require.NoError(t, err)
			require.Len(t, res.Steps, 2)
			assert.Nil(t, res.Steps[0].Request().Output, "no output declared at step 0")
			require.NotNil(t, res.Steps[1].Request().Output)
			assert.Equal(t, mode, res.Steps[1].Request().Output.Mode)
			assert.Equal(t, "runtime_test.summary", res.Steps[1].Request().Output.Type)
			assert.Nil(t, res.Steps[0].RequestOutput(), "RequestOutput of step 0")
			assert.Same(t, res.Steps[1].Request().Output, res.Steps[1].RequestOutput(), "RequestOutput of step 1")
			assert.Nil(t, (&runtime.Step{}).RequestOutput(), "RequestOutput of a record without a request")
			s, err := runtime.Output[summary](res)
			require.NoError(t, err)
			assert.Equal(t, summary{Title: "T", Points: []string{"a"}}, s)
			assert.JSONEq(t, `{"title":"T","points":["a"]}`, string(res.Steps[1].Output))
			assert.Nil(t, res.Steps[0].Output)
		})
	}
}

// TestOutputAuto: with OutputAuto the model's NativeOutput decides.
func TestOutputAuto(t *testing.T) {
	for _, native := range []bool{false, true} {
		model := snapshots.Script(snapshots.CallTool("lookup", nil), snapshots.Answer(summary{Title: "T"}))
		want := llm.OutputTool
		if native {
			model.WithNativeOutput()
			want = llm.OutputNative
		}
		res, err := runtime.Run(context.Background(), model, summarizer, runtime.Config{})
		require.NoError(t, err)
		assert.Equal(t, want, res.Steps[1].Request().Output.Mode)
		tools := res.Steps[1].Request().Tools
		assert.Equal(t, !native, tools[len(tools)-1].Name == "summary", "answer tool offered: %v", tools)
	}
}

// TestOutputTextInToolMode: in tool mode a text reply that is a valid
// answer is taken; one that is not gets a message asking for the tool.
func TestOutputTextInToolMode(t *testing.T) {
	model := snapshots.Script(
		snapshots.CallTool("lookup", nil),
		snapshots.Text("Here is my summary: it went well."),
		snapshots.Text(`{"title":"T","points":null}`),
	)
	res, err := runtime.Run(context.Background(), model, summarizer, runtime.Config{OutputMode: llm.OutputTool})
	require.NoError(t, err)
	require.Len(t, res.Steps, 3)
	msgs := res.Steps[2].Request().Messages
	last := msgs[len(msgs)-1]
	assert.Equal(t, defs.RoleUser, last.Role)
	assert.Contains(t, last.Content, `Give your final answer by calling the tool "summary"`)
	s, err := runtime.Output[summary](res)
	require.NoError(t, err)
	assert.Equal(t, "T", s.Title)
}

// TestOutputWithToolCallsGoesOn: in native mode a reply with tool calls is
// a step like any other; the answer is the text of a reply without.
func TestOutputWithToolCallsGoesOn(t *testing.T) {
	fn := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "lookup", "Look up.", func(ctx context.Context, _ struct{}) (string, error) { return "x", nil })
		prompt.DefOutput[summary](p, "summary", "")
		p.User("go")
		return nil
	}
	model := snapshots.Script(
		snapshots.Reply{Text: `{"title":"ignored","points":[]}`, Calls: []snapshots.Call{{Name: "lookup"}}},
		snapshots.Answer(summary{Title: "T"}),
	)
	res, err := runtime.Run(context.Background(), model, fn, runtime.Config{OutputMode: llm.OutputNative})
	require.NoError(t, err)
	require.Len(t, res.Steps, 2)
	s, err := runtime.Output[summary](res)
	require.NoError(t, err)
	assert.Equal(t, "T", s.Title)
}

// TestOutputNoRetries: a negative OutputRetries fails at the first invalid
// answer.
func TestOutputNoRetries(t *testing.T) {
	model := snapshots.Script(snapshots.CallTool("lookup", nil), snapshots.Answer(`{"title":1}`))
	_, err := runtime.Run(context.Background(), model, summarizer, runtime.Config{OutputRetries: -1})
	var oe *runtime.OutputError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, 1, oe.Invalid)
	assert.Equal(t, `{"title":1}`, oe.Raw)
	assert.ErrorContains(t, err, `step 1: output "summary": 1 invalid answers`)
}

// TestOutputBadTypes: types strict structured outputs cannot express are
// errors naming the type and the field, at the DefOutput call.
func TestOutputBadTypes(t *testing.T) {
	type withMap struct {
		Tags map[string]string `json:"tags"`
	}
	type inner struct {
		Value any `json:"value"`
	}
	type withAny struct {
		Items []inner `json:"items"`
	}
	type node struct {
		Children []node `json:"children"`
	}
	tests := []struct {
		name string
		decl func(p *prompt.Prompt)
		want []string
	}{
		{"map", func(p *prompt.Prompt) { prompt.DefOutput[withMap](p, "out", "") },
			[]string{"output type runtime_test.withMap: field Tags (map[string]string): a map has free keys"}},
		{"interface in a slice", func(p *prompt.Prompt) { prompt.DefOutput[withAny](p, "out", "") },
			[]string{"field Items[].Value (interface {}): an interface type has no schema"}},
		{"not a struct", func(p *prompt.Prompt) { prompt.DefOutput[[]string](p, "out", "") },
			[]string{"output type []string: the output must be a struct"}},
		{"recursive", func(p *prompt.Prompt) { prompt.DefOutput[node](p, "out", "") },
			[]string{"field Children[] (runtime_test.node): the type refers to itself"}},
		{"raw JSON", func(p *prompt.Prompt) {
			prompt.DefOutput[struct {
				Extra json.RawMessage `json:"extra"`
			}](p, "out", "")
		}, []string{"field Extra (json.RawMessage): json.RawMessage holds any JSON value"}},
		{"bytes", func(p *prompt.Prompt) {
			prompt.DefOutput[struct{ Data []byte }](p, "out", "")
		}, []string{"field Data ([]uint8): encoding/json writes a byte slice as base64 text"}},
		{"time at the top", func(p *prompt.Prompt) { prompt.DefOutput[time.Time](p, "out", "") },
			[]string{"output type time.Time: the output must be a struct encoded as a JSON object"}},
		{"own encoding", func(p *prompt.Prompt) {
			prompt.DefOutput[struct{ Addr netip.Addr }](p, "out", "")
		}, []string{"field Addr (netip.Addr): the type has its own JSON encoding"}},
		{"bad name", func(p *prompt.Prompt) { prompt.DefOutput[summary](p, "my answer", "") },
			[]string{`invalid tool name "my answer"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fn := func(p *prompt.Prompt) error {
				tt.decl(p)
				p.User("go")
				return nil
			}
			_, err := runtime.Run(context.Background(), snapshots.Script(snapshots.Text("x")), fn, runtime.Config{})
			var pe *prompt.Error
			require.ErrorAs(t, err, &pe)
			assert.Contains(t, pe.Site, "output_test.go:")
			var me *prompt.MisuseError
			require.ErrorAs(t, err, &me)
			assert.True(t, strings.HasPrefix(me.Hook, "DefOutput"), me.Hook)
			for _, w := range tt.want {
				assert.ErrorContains(t, err, w)
			}
			if tt.name != "bad name" {
				var te *prompt.OutputTypeError
				require.ErrorAs(t, err, &te)
			}
		})
	}
}

// TestOutputNameClash: in tool mode the answer tool cannot share its name
// with a declared tool.
func TestOutputNameClash(t *testing.T) {
	fn := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "summary", "A tool.", func(ctx context.Context, _ struct{}) (string, error) { return "", nil })
		prompt.DefOutput[summary](p, "summary", "")
		p.User("go")
		return nil
	}
	_, err := runtime.Run(context.Background(), snapshots.Script(snapshots.Text("x")), fn, runtime.Config{OutputMode: llm.OutputTool})
	var se *runtime.StepError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "render", se.Op)
	assert.ErrorContains(t, err, `output "summary" has the name of a declared tool`)
	// Native mode has no answer tool: no clash.
	_, err = runtime.Run(context.Background(), snapshots.Script(snapshots.Answer(summary{})), fn, runtime.Config{OutputMode: llm.OutputNative})
	require.NoError(t, err)
}

// TestOutputOfRunWithout: Output of a run without a typed answer, and
// into another type.
func TestOutputOfRunWithout(t *testing.T) {
	_, err := runtime.Output[summary](nil)
	require.ErrorIs(t, err, runtime.ErrNoOutput)
	res, err := runtime.Run(context.Background(), snapshots.Script(snapshots.Text("hi")), func(p *prompt.Prompt) error {
		p.User("go")
		return nil
	}, runtime.Config{})
	require.NoError(t, err)
	_, err = runtime.Output[summary](res)
	require.ErrorIs(t, err, runtime.ErrNoOutput)

	res, err = runtime.Run(context.Background(), snapshots.Script(snapshots.CallTool("lookup", nil), snapshots.Answer(summary{Title: "T"})), summarizer, runtime.Config{})
	require.NoError(t, err)
	_, err = runtime.Output[struct{ Title int }](res)
	var ute *json.UnmarshalTypeError
	require.ErrorAs(t, err, &ute)
}

// TestOutputSubAgent: a sub-agent with a typed answer gives its JSON to
// the parent.
func TestOutputSubAgent(t *testing.T) {
	parent := func(p *prompt.Prompt) error {
		p.DefAgent("writer", "Writes a summary.", func(p *prompt.Prompt) error {
			prompt.DefOutput[summary](p, "summary", "")
			return nil
		})
		p.User("go")
		return nil
	}
	model := snapshots.Script(snapshots.CallTool("writer", prompt.AgentArgs{Task: "sum up"}), snapshots.Text("ok")).
		Agent("writer", snapshots.Answer(summary{Title: "T", Points: []string{}}))
	res, err := runtime.Run(context.Background(), model, parent, runtime.Config{})
	require.NoError(t, err)
	assert.JSONEq(t, `{"title":"T","points":[]}`, res.Steps[0].ToolResults[0].Content)
}

// TestOutputResumeRevalidates: a run that stopped after the model called
// the answer tool, before the result was saved, validates the answer on
// resume instead of calling it interrupted.
func TestOutputResumeRevalidates(t *testing.T) {
	ctx := context.Background()
	fn := func(p *prompt.Prompt) error {
		prompt.DefOutput[summary](p, "summary", "")
		p.User("go")
		return nil
	}
	mem := session.NewMemory()
	store := &failingStore{Store: mem, fail: func(cp *session.Checkpoint) bool { return cp.Pending != nil && len(cp.Pending.Results) == 1 }}
	m := snapshots.Script(snapshots.Answer(summary{Title: "T"}))
	_, err := runtime.Run(ctx, m, fn, runtime.Config{Store: store, SessionID: "s", OutputMode: llm.OutputTool})
	require.True(t, errors.Is(err, errCrash), "first run: %v", err)
	r, err := runtime.Resume(ctx, snapshots.Script(), fn, runtime.Config{Store: mem, SessionID: "s", OutputMode: llm.OutputTool})
	require.NoError(t, err)
	res, err := r.Run(ctx)
	require.NoError(t, err)
	require.Len(t, res.Steps, 1)
	assert.True(t, res.Steps[0].Resumed)
	assert.Empty(t, res.Steps[0].Interrupted)
	s, err := runtime.Output[summary](res)
	require.NoError(t, err)
	assert.Equal(t, "T", s.Title)
}

type base struct {
	ID string `json:"id"`
}

type event struct {
	base
	At    time.Time `json:"at"`
	Place *place    `json:"place"`
	Tags  []string  `json:"tags,omitempty"`
	Count int       `json:"count,omitempty"`
	//lint:ignore U1000 an unexported field, which the schema leaves out
	private int
	Skipped string `json:"-"`
}

type place struct {
	Name string `json:"name"`
}

// TestOutputStrictSchema: the schema sent is in strict form (embedded
// fields inlined, every property required, optional ones admitting null,
// no additional properties at any level), and answers are validated
// against the Go type's own requirements, so an answer that leaves out an
// optional field is valid too.
func TestOutputStrictSchema(t *testing.T) {
	fn := func(p *prompt.Prompt) error {
		prompt.DefOutput[event](p, "event", "")
		p.User("go")
		return nil
	}
	model := snapshots.Script(
		snapshots.Answer(`{"id":"e1","at":"2026-11-23T10:00:00Z","place":{"name":"Paris","extra":1},"tags":null,"count":null}`),
		snapshots.Answer(`{"id":"e1","at":"2026-11-23T10:00:00Z","place":null}`),
	)
	res, err := runtime.Run(context.Background(), model, fn, runtime.Config{OutputMode: llm.OutputNative})
	require.NoError(t, err)
	want := `{"type":"object","properties":{
		"id":{"type":"string"},
		"at":{"type":"string"},
		"place":{"type":["null","object"],"properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false},
		"tags":{"type":["null","array"],"items":{"type":"string"}},
		"count":{"type":["integer","null"]}},
		"required":["id","at","place","tags","count"],"additionalProperties":false}`
	assert.JSONEq(t, want, string(res.Steps[0].Request().Output.Schema))
	require.Len(t, res.Steps, 2, "the first answer has a property the schema does not allow")
	assert.Contains(t, res.Steps[1].Request().Messages[2].Content, "extra")
	e, err := runtime.Output[event](res)
	require.NoError(t, err)
	assert.Equal(t, "e1", e.ID)
	assert.Nil(t, e.Place)
}

// TestOutputCounted: the schema of a response_format counts in the
// request's input tokens, as the answer tool's does in tool mode.
func TestOutputCounted(t *testing.T) {
	tokens := func(declare bool, mode llm.OutputMode) int {
		fn := func(p *prompt.Prompt) error {
			if declare {
				prompt.DefOutput[event](p, "event", "The event.")
			}
			p.User("go")
			return nil
		}
		reply := snapshots.Text(`{"id":"e","at":"x","place":null}`)
		res, err := runtime.Run(context.Background(), snapshots.Script(reply), fn, runtime.Config{OutputMode: mode})
		require.NoError(t, err)
		return res.Steps[0].InputTokens
	}
	plain := tokens(false, llm.OutputNative)
	native := tokens(true, llm.OutputNative)
	tool := tokens(true, llm.OutputTool)
	assert.Greater(t, native, plain+20, "the response_format's schema is not counted")
	assert.Greater(t, tool, plain+20, "the answer tool is not counted")
}

type (
	d1  struct{ D d2 }
	d2  struct{ D d3 }
	d3  struct{ D d4 }
	d4  struct{ D d5 }
	d5  struct{ D d6 }
	d6  struct{ D d7 }
	d7  struct{ D d8 }
	d8  struct{ D d9 }
	d9  struct{ D d10 }
	d10 struct{ D d11 }
	d11 struct{ X int }
)

// TestOutputTooDeep: objects nested deeper than strict mode takes are an
// error naming the field.
func TestOutputTooDeep(t *testing.T) {
	fn := func(p *prompt.Prompt) error {
		prompt.DefOutput[d1](p, "deep", "")
		return nil
	}
	_, err := runtime.Run(context.Background(), snapshots.Script(snapshots.Text("x")), fn, runtime.Config{})
	var te *prompt.OutputTypeError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, "D.D.D.D.D.D.D.D.D.D", te.Field)
	assert.ErrorContains(t, err, "nest more than 10 deep")
	_, err = runtime.Run(context.Background(), snapshots.Script(snapshots.Answer(d2{})), func(p *prompt.Prompt) error {
		prompt.DefOutput[d2](p, "deep", "")
		return nil
	}, runtime.Config{})
	require.NoError(t, err, "ten levels are fine")
}

// TestOutputFencedText: an answer in a Markdown code fence is taken
// without it; of two calls of the answer tool in one reply, the valid one.
func TestOutputFencedText(t *testing.T) {
	model := snapshots.Script(
		snapshots.CallTool("lookup", nil),
		snapshots.Text("```json\n{\"title\":\"T\",\"points\":[]}\n```\n"),
	)
	res, err := runtime.Run(context.Background(), model, summarizer, runtime.Config{OutputMode: llm.OutputNative})
	require.NoError(t, err)
	assert.Equal(t, `{"title":"T","points":[]}`, string(res.Steps[1].Output))

	model = snapshots.Script(
		snapshots.CallTool("lookup", nil),
		snapshots.CallTools(snapshots.Call{Name: "summary", Args: `{"title":2}`}, snapshots.Call{Name: "summary", Args: `{"title":"T","points":null}`}),
	)
	res, err = runtime.Run(context.Background(), model, summarizer, runtime.Config{OutputMode: llm.OutputTool})
	require.NoError(t, err)
	assert.Equal(t, `{"title":"T","points":null}`, string(res.Steps[1].Output))
	assert.True(t, res.Steps[1].ToolResults[0].IsError)
}

// TestOutputTraced: the chat span of a request for a typed answer says so
// (gen_ai.output.type=json, with the output's mode and name).
func TestOutputTraced(t *testing.T) {
	tp, exp := tracer(t)
	model := snapshots.Script(snapshots.CallTool("lookup", nil), snapshots.Answer(summary{Title: "T"}))
	_, err := runtime.Run(context.Background(), model, summarizer, runtime.Config{TracerProvider: tp})
	require.NoError(t, err)
	spans := exp.GetSpans()
	require.Len(t, find(spans, "chat", "gen_ai.output.type", "json"), 1, "only the step that declared the output")
	got := attrs(one(t, spans, "chat", "reprompt.step", int64(1)), "gen_ai.output.type", "reprompt.output.mode", "reprompt.output.name")
	assert.Equal(t, map[string]any{"gen_ai.output.type": "json", "reprompt.output.mode": "tool", "reprompt.output.name": "summary"}, got)
}

// BenchmarkOutputRun runs a two-step agent (a tool call, then the answer)
// ending with text, and with a typed answer in each mode: the cost of the
// schema, the validation and the decoding.
func BenchmarkOutputRun(b *testing.B) {
	plain := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "lookup", "Look something up.", func(ctx context.Context, _ struct{}) (string, error) { return "facts", nil })
		p.User("Summarize.")
		return nil
	}
	typed := func(p *prompt.Prompt) error {
		prompt.DefOutput[summary](p, "summary", "The summary.")
		return plain(p)
	}
	answer := summary{Title: "T", Points: []string{"a", "b", "c"}}
	for _, bc := range []struct {
		name  string
		fn    prompt.Func
		mode  llm.OutputMode
		reply snapshots.Reply
	}{
		{"text", plain, llm.OutputAuto, snapshots.Text(`{"title":"T","points":["a","b","c"]}`)},
		{"response_format", typed, llm.OutputNative, snapshots.Answer(answer)},
		{"tool", typed, llm.OutputTool, snapshots.Answer(answer)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			ctx := context.Background()
			for b.Loop() {
				model := snapshots.Script(snapshots.CallTool("lookup", nil), bc.reply)
				res, err := runtime.Run(ctx, model, bc.fn, runtime.Config{OutputMode: bc.mode})
				require.NoError(b, err)
				if _, err := runtime.Output[summary](res); bc.mode != llm.OutputAuto {
					require.NoError(b, err, "Output")
				}
			}
		})
	}
}

// TestOutputNoAllocationPerStep: declaring a typed answer costs no
// allocation per step while the model works with its tools (the schema,
// the declaration, the request's spec and tool list are made once), in
// either mode.
func TestOutputNoAllocationPerStep(t *testing.T) {
	perStep := func(declare bool, mode llm.OutputMode) float64 {
		fn := func(p *prompt.Prompt) error {
			prompt.DefTool(p, "lookup", "Look.", func(ctx context.Context, _ struct{}) (string, error) { return "x", nil })
			if declare {
				prompt.DefOutput[summary](p, "summary", "The summary.")
			}
			p.User("go")
			return nil
		}
		run := func(n int) float64 {
			return testing.AllocsPerRun(3, func() {
				replies := make([]snapshots.Reply, 0, n+1)
				for range n {
					replies = append(replies, snapshots.CallTool("lookup", nil))
				}
				replies = append(replies, snapshots.Text(`{"title":"T","points":null}`))
				_, err := runtime.Run(context.Background(), snapshots.Script(replies...), fn, runtime.Config{OutputMode: mode, MaxSteps: -1})
				require.NoError(t, err)
			})
		}
		return (run(200) - run(100)) / 100
	}
	for _, mode := range []llm.OutputMode{llm.OutputNative, llm.OutputTool} {
		without, with := perStep(false, mode), perStep(true, mode)
		assert.InDelta(t, without, with, 0.5, "%s: %.1f allocations a step with a typed answer declared, %.1f without", mode, with, without)
	}
}
