package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// namedModel is a scripted model that names itself and its provider, as an
// adapter does, and gives each reply an id.
type namedModel struct {
	*snapshots.Model
	n atomic.Int32
}

func (*namedModel) ModelName() string    { return "test-model" }
func (*namedModel) ProviderName() string { return "openai" }

func (m *namedModel) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	reply, err := m.Model.Generate(ctx, req)
	if err == nil {
		reply.ID = fmt.Sprintf("resp_%d", m.n.Add(1))
	}
	return reply, err
}

// tracer returns a tracer provider that records finished spans in memory.
func tracer(t *testing.T) (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, exp
}

// spanTree renders the spans as an indented tree, one line per span: its
// name, and its step for step spans. Siblings are in start order, except
// tool calls (which run concurrently), in call id order.
func spanTree(spans tracetest.SpanStubs) []string {
	children := map[string][]tracetest.SpanStub{}
	ids := map[string]bool{}
	for _, s := range spans {
		ids[s.SpanContext.SpanID().String()] = true
	}
	var roots []tracetest.SpanStub
	for _, s := range spans {
		p := s.Parent.SpanID().String()
		if !s.Parent.IsValid() || !ids[p] {
			roots = append(roots, s)
			continue
		}
		children[p] = append(children[p], s)
	}
	order := func(ss []tracetest.SpanStub) {
		slices.SortStableFunc(ss, func(a, b tracetest.SpanStub) int { return a.StartTime.Compare(b.StartTime) })
		slices.SortStableFunc(ss, func(a, b tracetest.SpanStub) int {
			if strings.HasPrefix(a.Name, "execute_tool") && strings.HasPrefix(b.Name, "execute_tool") {
				return strings.Compare(attr(a, "gen_ai.tool.call.id").String(), attr(b, "gen_ai.tool.call.id").String())
			}
			return 0
		})
	}
	var out []string
	var walk func(s tracetest.SpanStub, depth int)
	walk = func(s tracetest.SpanStub, depth int) {
		line := strings.Repeat("  ", depth) + s.Name
		if s.Name == "reprompt.step" {
			line += " " + attr(s, "reprompt.step").String()
		}
		if attr(s, "reprompt.summary").AsBool() {
			line += " (summary)"
		}
		out = append(out, line)
		kids := children[s.SpanContext.SpanID().String()]
		order(kids)
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	order(roots)
	for _, r := range roots {
		walk(r, 0)
	}
	return out
}

// attr returns the value of the span's attribute key (an invalid value if
// it has none).
func attr(s tracetest.SpanStub, key string) attribute.Value {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// attrs returns the span's attributes whose keys are in keys, by key.
func attrs(s tracetest.SpanStub, keys ...string) map[string]any {
	out := map[string]any{}
	for _, kv := range s.Attributes {
		if slices.Contains(keys, string(kv.Key)) {
			out[string(kv.Key)] = kv.Value.AsInterface()
		}
	}
	return out
}

// find returns the spans named name whose attribute key (if not "") has
// value v.
func find(spans tracetest.SpanStubs, name, key string, v any) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name && (key == "" || attr(s, key).AsInterface() == v) {
			out = append(out, s)
		}
	}
	return out
}

// one is find that requires exactly one span.
func one(t *testing.T, spans tracetest.SpanStubs, name, key string, v any) tracetest.SpanStub {
	t.Helper()
	got := find(spans, name, key, v)
	require.Len(t, got, 1, "spans %q with %s=%v", name, key, v)
	return got[0]
}

// tracedAgent is a prompt with a tool, a tool that panics, a sub-agent and,
// at step 1, an effect that summarizes the conversation with the run's
// model and commits it shorter, disables boom and reminds a variable.
func tracedAgent(p *prompt.Prompt) error {
	notes := p.Def("notes", "keep it short")
	prompt.DefTool(p, "add", "Add.", func(ctx context.Context, _ struct{}) (string, error) { return "added", nil })
	boom := prompt.DefTool(p, "boom", "Panics.", func(ctx context.Context, _ struct{}) (string, error) { panic("kaboom") })
	p.DefAgent("helper", "Helps.", func(p *prompt.Prompt) error {
		prompt.DefTool(p, "lookup", "Look up.", func(ctx context.Context, _ struct{}) (string, error) { return "42", nil })
		return nil
	})
	p.Effect(effects.Always, func(ctx context.Context, s *effects.Step) error {
		if s.Number != 1 {
			return nil
		}
		sum, err := s.Model.Complete(ctx, "Summarize.", "the conversation")
		if err != nil {
			return err
		}
		s.CommitMessages([]defs.Message{defs.UserMessage(sum)})
		boom.Disable()
		notes.Remind()
		return nil
	})
	p.User("Do the secret task.")
	return nil
}

func tracedScript() *namedModel {
	u := &llm.Usage{InputTokens: 400, OutputTokens: 10, CachedTokens: 300, CacheWriteTokens: 60, CacheWrite1hTokens: 20}
	return &namedModel{Model: snapshots.Script(
		snapshots.Reply{Calls: []snapshots.Call{{Name: "add"}, {Name: "boom"}, {Name: "helper", Args: prompt.AgentArgs{Task: "find it"}}}, Usage: u},
		snapshots.Reply{Calls: []snapshots.Call{{Name: "lookup"}}, Usage: u}, // the sub-agent
		snapshots.Reply{Text: "found 42", Usage: u},                          // the sub-agent
		snapshots.Reply{Text: "a summary", Usage: u, Summary: true},          // the effect's summary
		snapshots.Reply{Text: "All done.", Usage: u},
	)}
}

func TestTraceSpanTreeAndAttributes(t *testing.T) {
	tp, exp := tracer(t)
	_, err := runtime.Run(context.Background(), tracedScript(), tracedAgent,
		runtime.Config{Name: "main", TracerProvider: tp, SessionID: "s-1"})
	require.NoError(t, err)
	spans := exp.GetSpans()

	want := []string{
		"invoke_agent main",
		"  reprompt.step 0",
		"    chat test-model",
		"    execute_tool add",
		"    execute_tool boom",
		"    execute_tool helper",
		"      invoke_agent helper",
		"        reprompt.step 0",
		"          chat test-model",
		"          execute_tool lookup",
		"        reprompt.step 1",
		"          chat test-model",
		"  reprompt.step 1",
		"    chat test-model (summary)",
		"    chat test-model",
	}
	require.Empty(t, cmp.Diff(want, spanTree(spans)), "span tree mismatch (-want +got)")
	for _, s := range spans {
		assert.Equal(t, runtime.TracerName, s.InstrumentationScope.Name, s.Name)
	}

	run := one(t, spans, "invoke_agent main", "", nil)
	assert.Empty(t, cmp.Diff(map[string]any{
		"gen_ai.operation.name":                "invoke_agent",
		"gen_ai.provider.name":                 "openai",
		"gen_ai.request.model":                 "test-model",
		"gen_ai.agent.name":                    "main",
		"gen_ai.conversation.id":               "s-1",
		"reprompt.steps":                       int64(2),
		"gen_ai.usage.input_tokens":            int64(5 * 400), // sub-agent and summary included
		"gen_ai.usage.output_tokens":           int64(5 * 10),
		"gen_ai.usage.cache_read.input_tokens": int64(5 * 300),
		// The cache's writes, within the input as its reads are.
		"gen_ai.usage.cache_creation.input_tokens":      int64(5 * 60),
		"reprompt.usage.cache_creation_1h.input_tokens": int64(5 * 20),
	}, attrs(run, "gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model", "gen_ai.agent.name",
		"gen_ai.conversation.id", "reprompt.steps", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens",
		"gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_creation.input_tokens",
		"reprompt.usage.cache_creation_1h.input_tokens")), "run span attributes mismatch (-want +got)")
	assert.Equal(t, codes.Unset, run.Status.Code)

	// The first model call of the parent.
	chats := find(spans, "chat test-model", "gen_ai.response.id", "resp_1")
	require.Len(t, chats, 1)
	assert.Empty(t, cmp.Diff(map[string]any{
		"gen_ai.operation.name":                         "chat",
		"gen_ai.provider.name":                          "openai",
		"gen_ai.request.model":                          "test-model",
		"gen_ai.response.id":                            "resp_1",
		"gen_ai.response.finish_reasons":                []string{"tool_calls"},
		"gen_ai.usage.input_tokens":                     int64(400),
		"gen_ai.usage.output_tokens":                    int64(10),
		"gen_ai.usage.cache_read.input_tokens":          int64(300),
		"gen_ai.usage.cache_creation.input_tokens":      int64(60),
		"reprompt.usage.cache_creation_1h.input_tokens": int64(20),
		"reprompt.step":                                 int64(0),
	}, attrs(chats[0], "gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model", "gen_ai.response.id",
		"gen_ai.response.finish_reasons", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens",
		"gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_creation.input_tokens",
		"reprompt.usage.cache_creation_1h.input_tokens", "reprompt.step")), "chat span attributes mismatch (-want +got)")
	assert.Equal(t, "chat test-model", chats[0].Name)

	// Tool calls: name and id; the panic is a typed error on its span.
	add := one(t, spans, "execute_tool add", "", nil)
	assert.Empty(t, cmp.Diff(map[string]any{
		"gen_ai.operation.name": "execute_tool",
		"gen_ai.tool.name":      "add",
		"gen_ai.tool.call.id":   "call_1",
		"gen_ai.tool.type":      "function",
		"reprompt.step":         int64(0),
	}, attrs(add, "gen_ai.operation.name", "gen_ai.tool.name", "gen_ai.tool.call.id", "gen_ai.tool.type", "reprompt.step", "error.type")), "tool span attributes mismatch (-want +got)")
	assert.Equal(t, codes.Unset, add.Status.Code)
	boom := one(t, spans, "execute_tool boom", "", nil)
	assert.Equal(t, codes.Error, boom.Status.Code)
	assert.Contains(t, boom.Status.Description, `tool "boom" panicked`)
	assert.Equal(t, "*runtime.ToolPanicError", attr(boom, "error.type").AsString())
	require.Len(t, boom.Events, 1)
	assert.Equal(t, "exception", boom.Events[0].Name)
	assert.Contains(t, boom.Events[0].Attributes, attribute.String("exception.type", "*runtime.ToolPanicError"))

	// Steps: tokens, effects with reasons, disables, reminders, commits.
	steps := find(spans, "reprompt.step", "", nil)
	var s0, s1 tracetest.SpanStub
	for _, s := range steps {
		if s.Parent.SpanID() == run.SpanContext.SpanID() {
			if attr(s, "reprompt.step").AsInt64() == 0 {
				s0 = s
			} else {
				s1 = s
			}
		}
	}
	require.True(t, s0.SpanContext.IsValid() && s1.SpanContext.IsValid(), "both steps of the parent")
	assert.Positive(t, attr(s0, "reprompt.input_tokens").AsInt64())
	assert.Equal(t, int64(0), attr(s0, "reprompt.prefix_tokens").AsInt64(), "no previous request at step 0")
	assert.Equal(t, int64(0), attr(s1, "reprompt.prefix_tokens").AsInt64(), "the tools changed (boom disabled): nothing shared")
	helper := one(t, spans, "invoke_agent helper", "", nil)
	for _, s := range steps {
		if s.Parent.SpanID() == helper.SpanContext.SpanID() && attr(s, "reprompt.step").AsInt64() == 1 {
			assert.Positive(t, attr(s, "reprompt.prefix_tokens").AsInt64(), "the sub-agent's step 1 shares its step 0 request")
			assert.Less(t, attr(s, "reprompt.prefix_tokens").AsInt64(), attr(s, "reprompt.input_tokens").AsInt64())
		}
	}
	assert.Equal(t, float64(attr(s1, "reprompt.input_tokens").AsInt64()-attr(s1, "reprompt.prefix_tokens").AsInt64())+
		0.1*float64(attr(s1, "reprompt.prefix_tokens").AsInt64()), attr(s1, "reprompt.billed_input").AsFloat64())
	assert.Equal(t, int64(3), attr(s0, "reprompt.tool_calls").AsInt64())
	assert.Equal(t, []string{"tool:boom"}, attr(s1, "reprompt.disabled").AsStringSlice())
	assert.Equal(t, []string{"variable:notes"}, attr(s1, "reprompt.reminded").AsStringSlice())
	assert.True(t, attr(s1, "reprompt.committed").AsBool())
	assert.Equal(t, int64(1), attr(s1, "reprompt.compactions").AsInt64())
	assert.True(t, attr(s1, "reprompt.done").AsBool())
	assert.False(t, attr(s0, "reprompt.done").AsBool())

	var events []string
	for _, e := range s1.Events {
		line := e.Name
		for _, kv := range e.Attributes {
			line += " " + string(kv.Key) + "=" + kv.Value.String()
		}
		events = append(events, line)
	}
	require.Len(t, events, 2, "%q", events)
	assert.Equal(t, "reprompt.compaction reprompt.messages.before=5 reprompt.messages.after=1", events[0][:strings.Index(events[0], " reprompt.tokens.before")])
	assert.Regexp(t, `^reprompt\.effect reprompt\.effect\.id=#0 reprompt\.effect\.site=observe_test\.go:\d+ reprompt\.effect\.phase=before-call reprompt\.effect\.reason=always$`, events[1])
}

// contentKeys are the attributes that hold message content.
var contentKeys = []string{"gen_ai.system_instructions", "gen_ai.input.messages", "gen_ai.output.messages",
	"gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "reprompt.effect.reason.detail"}

func TestTraceContentIsOptIn(t *testing.T) {
	changing := func(p *prompt.Prompt) error {
		n, setN := prompt.State(p, "n", 0)
		prompt.DefTool(p, "bump", "Bump.", func(ctx context.Context, a echoArgs) (string, error) {
			setN.Set(ctx, n+1)
			return "bumped " + a.Text, nil
		})
		p.Effect(effects.On(effects.Named("n", n)), func(ctx context.Context, s *effects.Step) error { return nil })
		p.DefSystem("role", "You bump.")
		p.User("Do the secret task.")
		return nil
	}
	script := func() *namedModel {
		return &namedModel{Model: snapshots.Script(snapshots.CallTool("bump", echoArgs{Text: "secret-arg"}), snapshots.Text("secret answer"))}
	}
	seen := func(spans tracetest.SpanStubs) (keys []string, text string) {
		for _, s := range spans {
			for _, kv := range s.Attributes {
				if slices.Contains(contentKeys, string(kv.Key)) {
					keys = append(keys, string(kv.Key))
				}
				text += kv.Value.String() + "\n"
			}
			for _, e := range s.Events {
				for _, kv := range e.Attributes {
					if slices.Contains(contentKeys, string(kv.Key)) {
						keys = append(keys, string(kv.Key))
					}
					text += kv.Value.String() + "\n"
				}
			}
		}
		slices.Sort(keys)
		return slices.Compact(keys), text
	}

	tp, exp := tracer(t)
	_, err := runtime.Run(context.Background(), script(), changing, runtime.Config{TracerProvider: tp})
	require.NoError(t, err)
	keys, text := seen(exp.GetSpans())
	assert.Empty(t, keys, "content recorded without TraceContent")
	for _, secret := range []string{"secret", "You bump"} {
		assert.NotContains(t, text, secret)
	}
	require.NotEmpty(t, find(exp.GetSpans(), "invoke_agent", "", nil), "the run without a name is invoke_agent")

	tp, exp = tracer(t)
	_, err = runtime.Run(context.Background(), script(), changing, runtime.Config{TracerProvider: tp, TraceContent: true})
	require.NoError(t, err)
	spans := exp.GetSpans()
	keys, _ = seen(spans)
	assert.Equal(t, []string{"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
		"gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "reprompt.effect.reason.detail"}, keys)

	chat := one(t, spans, "chat test-model", "gen_ai.response.id", "resp_2")
	var in, out []map[string]any
	require.NoError(t, json.Unmarshal([]byte(attr(chat, "gen_ai.input.messages").AsString()), &in))
	require.NoError(t, json.Unmarshal([]byte(attr(chat, "gen_ai.output.messages").AsString()), &out))
	var call string
	for _, s := range spans {
		if s.Name == "chat test-model" && attr(s, "gen_ai.response.id").AsString() == "resp_1" {
			var o []map[string]any
			require.NoError(t, json.Unmarshal([]byte(attr(s, "gen_ai.output.messages").AsString()), &o))
			call = o[0]["parts"].([]any)[0].(map[string]any)["id"].(string)
		}
	}
	assert.Empty(t, cmp.Diff([]map[string]any{
		{"role": "user", "parts": []any{map[string]any{"type": "text", "content": "Do the secret task."}}},
		{"role": "assistant", "parts": []any{map[string]any{"type": "tool_call", "id": call, "name": "bump",
			"arguments": map[string]any{"text": "secret-arg"}}}},
		{"role": "tool", "parts": []any{map[string]any{"type": "tool_call_response", "id": call, "response": "bumped secret-arg"}}},
	}, in), "input messages mismatch (-want +got)")
	assert.Empty(t, cmp.Diff([]map[string]any{
		{"role": "assistant", "finish_reason": "stop", "parts": []any{map[string]any{"type": "text", "content": "secret answer"}}},
	}, out), "output messages mismatch (-want +got)")
	assert.JSONEq(t, `[{"type":"text","content":"<role>\nYou bump.\n</role>"}]`, attr(chat, "gen_ai.system_instructions").AsString())
	tool := one(t, spans, "execute_tool bump", "", nil)
	assert.JSONEq(t, `{"text":"secret-arg"}`, attr(tool, "gen_ai.tool.call.arguments").AsString())
	assert.Equal(t, "bumped secret-arg", attr(tool, "gen_ai.tool.call.result").AsString())
}

func TestTraceErrors(t *testing.T) {
	tp, exp := tracer(t)
	fail := &llm.ModelError{StatusCode: 401, Message: "bad key"}
	_, err := runtime.Run(context.Background(), &namedModel{Model: snapshots.Script(snapshots.Fail(fail))},
		func(p *prompt.Prompt) error { p.User("hi"); return nil }, runtime.Config{TracerProvider: tp})
	require.Error(t, err)
	spans := exp.GetSpans()
	require.Len(t, spans, 3)
	for _, s := range spans {
		assert.Equal(t, codes.Error, s.Status.Code, s.Name)
		assert.Contains(t, s.Status.Description, "bad key", s.Name)
		assert.Equal(t, "*llm.ModelError", attr(s, "error.type").AsString(), s.Name)
		assert.Equal(t, int64(401), attr(s, "http.response.status_code").AsInt64(), s.Name)
		require.NotEmpty(t, s.Events, s.Name)
		assert.Equal(t, "exception", s.Events[len(s.Events)-1].Name, s.Name)
	}

	// A step limit ends the run with runtime.ErrMaxSteps.
	tp, exp = tracer(t)
	_, err = runtime.Run(context.Background(), snapshots.Script(s1Script(3)...), scenarioS1, runtime.Config{MaxSteps: 2, TracerProvider: tp})
	require.ErrorIs(t, err, runtime.ErrMaxSteps)
	run := one(t, exp.GetSpans(), "invoke_agent", "", nil)
	assert.Equal(t, codes.Error, run.Status.Code)
	assert.Equal(t, "runtime.ErrMaxSteps", attr(run, "error.type").AsString())
	chat := find(exp.GetSpans(), "chat", "", nil)
	assert.Len(t, chat, 2, "a model without a name: span chat")
	assert.Equal(t, attribute.EMPTY, attr(chat[0], "gen_ai.request.model").Type(), "no model name")
}

// TestTraceRetries runs in a synctest bubble: the retry waits its default
// backoff in fake time.
func TestTraceRetries(t *testing.T) { synctest.Test(t, testTraceRetries) }

func testTraceRetries(t *testing.T) {
	tp, exp := tracer(t)
	busy := &llm.ModelError{StatusCode: 503, Retryable: true, Message: "busy"}
	_, err := runtime.Run(context.Background(), snapshots.Script(snapshots.Fail(busy), snapshots.Text("ok")),
		func(p *prompt.Prompt) error { p.User("hi"); return nil },
		runtime.Config{TracerProvider: tp, Retries: 1})
	require.NoError(t, err)
	spans := exp.GetSpans()
	chats := find(spans, "chat", "", nil)
	require.Len(t, chats, 2, "one span per attempt")
	assert.Equal(t, codes.Error, chats[0].Status.Code)
	assert.Equal(t, codes.Unset, chats[1].Status.Code)
	step := one(t, spans, "reprompt.step", "", nil)
	require.Len(t, step.Events, 1)
	assert.Equal(t, "reprompt.retry", step.Events[0].Name)
	assert.Contains(t, step.Events[0].Attributes, attribute.Int("reprompt.attempt", 1))
	i := slices.IndexFunc(step.Events[0].Attributes, func(a attribute.KeyValue) bool { return a.Key == "reprompt.backoff" })
	require.GreaterOrEqual(t, i, 0, "no reprompt.backoff attribute")
	backoff := step.Events[0].Attributes[i].Value.AsString()
	// Between half a second and a second: the default backoff, with jitter.
	if d, err := time.ParseDuration(backoff); assert.NoError(t, err, "reprompt.backoff") {
		assert.GreaterOrEqual(t, d, time.Second/2, "reprompt.backoff")
		assert.LessOrEqual(t, d, time.Second, "reprompt.backoff")
	}
}

type echoArgs struct {
	Text string `json:"text"`
}
