package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
)

// forecast is a typed answer with nested objects, a slice of them, an
// optional field and a pointer: all of what strict mode must get right.
type forecast struct {
	City string `json:"city"`
	Days []struct {
		Date  string  `json:"date"`
		TempC float64 `json:"temp_c"`
		Rain  *bool   `json:"rain"`
	} `json:"days"`
	Note string `json:"note,omitempty" jsonschema:"anything worth saying"`
}

func forecaster(p *prompt.Prompt) error {
	p.DefSystem("role", "You forecast.")
	prompt.DefOutput[forecast](p, "forecast", "The forecast for the city.")
	p.User("Weather in Paris for two days?")
	return nil
}

// completion is a chat completion body whose message has content or a
// refusal.
func completion(id, content, refusal string) string {
	c, r := "null", "null"
	if content != "" {
		b, _ := json.Marshal(content)
		c = string(b)
	}
	if refusal != "" {
		b, _ := json.Marshal(refusal)
		r = string(b)
	}
	return fmt.Sprintf(`{"id":%q,"object":"chat.completion","created":1741569952,"model":"gpt-4o-2024-08-06",
"choices":[{"index":0,"message":{"role":"assistant","content":%s,"refusal":%s,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],
"usage":{"prompt_tokens":50,"completion_tokens":20,"total_tokens":70}}`, id, c, r)
}

const validForecast = `{"city":"Paris","days":[{"date":"2026-11-24","temp_c":9.5,"rain":true},{"date":"2026-11-25","temp_c":11,"rain":null}],"note":null}`

// TestOutputResponseFormat runs an agent with a typed answer against the
// fake server (which checks every request body against the OpenAPI spec):
// gpt-4o takes a strict json_schema response_format; an invalid answer is
// sent back as a user message and the valid one decodes.
func TestOutputResponseFormat(t *testing.T) {
	srv := newFakeServer(t,
		reply{body: completion("chatcmpl-1", `{"city":"Paris","days":[{"date":"2026-11-24","temp_c":"mild","rain":null}],"note":null}`, "")},
		reply{body: completion("chatcmpl-2", validForecast, "")},
	)
	m := New(srv.config("gpt-4o-2024-08-06", nil))
	require.True(t, m.NativeOutput(), "gpt-4o's profile takes structured outputs")
	res, err := runtime.Run(context.Background(), m, forecaster, runtime.Config{})
	require.NoError(t, err)
	require.Equal(t, 2, srv.hits())

	rf, ok := srv.body(0)["response_format"].(map[string]any)
	require.True(t, ok, "no response_format in %v", srv.body(0))
	assert.Equal(t, "json_schema", rf["type"])
	js := rf["json_schema"].(map[string]any)
	assert.Equal(t, "forecast", js["name"])
	assert.Equal(t, "The forecast for the city.", js["description"])
	assert.Equal(t, true, js["strict"])
	requireStrict(t, js["schema"], "$")
	_, hasTools := srv.body(0)["tools"]
	assert.False(t, hasTools, "no answer tool with a response_format")

	msgs := srv.body(1)["messages"].([]any)
	last := msgs[len(msgs)-1].(map[string]any)
	assert.Equal(t, "user", last["role"])
	assert.Contains(t, last["content"], `does not match the JSON Schema of "forecast"`)
	assert.Contains(t, last["content"], "temp_c")
	assert.Equal(t, srv.body(0)["response_format"], srv.body(1)["response_format"])

	f, err := runtime.Output[forecast](res)
	require.NoError(t, err)
	assert.Equal(t, "Paris", f.City)
	require.Len(t, f.Days, 2)
	assert.Equal(t, 11.0, f.Days[1].TempC)
	assert.Nil(t, f.Days[1].Rain)
}

// requireStrict checks OpenAI's strict-mode rules on a schema: every
// object lists all its properties as required and forbids others.
func requireStrict(t *testing.T, s any, path string) {
	t.Helper()
	obj, ok := s.(map[string]any)
	require.True(t, ok, "%s: not a schema object", path)
	types := fmt.Sprint(obj["type"])
	if props, ok := obj["properties"].(map[string]any); ok || types == "object" {
		assert.Equal(t, false, obj["additionalProperties"], "%s: additionalProperties", path)
		req, _ := obj["required"].([]any)
		assert.Len(t, req, len(props), "%s: every property required", path)
		for name, p := range props {
			requireStrict(t, p, path+"."+name)
		}
	}
	if items, ok := obj["items"]; ok {
		requireStrict(t, items, path+"[]")
	}
}

// TestOutputAnswerTool: a model whose profile does not take a
// response_format (or with Config.NativeOutput false) gets the answer as a
// tool; the run ends when it is called with valid arguments.
func TestOutputAnswerTool(t *testing.T) {
	call := fmt.Sprintf(`{"id":"chatcmpl-3","object":"chat.completion","created":1741569952,"model":"llama3.1",
"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_A","type":"function","function":{"name":"forecast","arguments":%q}}]},"logprobs":null,"finish_reason":"tool_calls"}],
"usage":{"prompt_tokens":50,"completion_tokens":20,"total_tokens":70}}`, validForecast)
	for _, tt := range []struct {
		name   string
		model  string
		native *bool
	}{
		{"profile", "llama3.1:8b", nil},
		{"override", "gpt-4o", new(false)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, reply{body: call})
			cfg := srv.config(tt.model, nil)
			cfg.NativeOutput = tt.native
			res, err := runtime.Run(context.Background(), New(cfg), forecaster, runtime.Config{})
			require.NoError(t, err)
			_, hasRF := srv.body(0)["response_format"]
			assert.False(t, hasRF)
			tools := srv.body(0)["tools"].([]any)
			require.Len(t, tools, 1)
			fn := tools[0].(map[string]any)["function"].(map[string]any)
			assert.Equal(t, "forecast", fn["name"])
			requireStrict(t, fn["parameters"], "$")
			f, err := runtime.Output[forecast](res)
			require.NoError(t, err)
			assert.Equal(t, "Paris", f.City)
			assert.Equal(t, llm.OutputTool, res.Steps[0].Request().Output.Mode)
		})
	}
}

// TestOutputNativeOverride: Config.NativeOutput true sends a
// response_format to a model the profiles do not know.
func TestOutputNativeOverride(t *testing.T) {
	assert.False(t, New(Config{Model: "my-local-model"}).NativeOutput())
	assert.True(t, New(Config{Model: "my-local-model", NativeOutput: new(true)}).NativeOutput())
}

// TestOutputRefusal: OpenAI's refusal field, streamed or not, ends the run
// with an *runtime.OutputError carrying it.
func TestOutputRefusal(t *testing.T) {
	const refusal = "I'm sorry, I can't help with that."
	chunk := func(delta, finish string) string {
		return fmt.Sprintf(`{"id":"chatcmpl-R","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`, delta, finish)
	}
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%t", stream), func(t *testing.T) {
			rep := reply{body: completion("chatcmpl-R", "", refusal)}
			if stream {
				rep = reply{events: []string{
					chunk(`{"role":"assistant","content":null,"refusal":""}`, "null"),
					chunk(`{"refusal":"I'm sorry, "}`, "null"),
					chunk(`{"refusal":"I can't help with that."}`, "null"),
					chunk(`{}`, `"stop"`),
					"[DONE]",
				}}
			}
			srv := newFakeServer(t, rep)
			cfg := runtime.Config{}
			if stream {
				cfg.OnDelta = func(llm.Delta) {}
			}
			_, err := runtime.Run(context.Background(), New(srv.config("gpt-4o", nil)), forecaster, cfg)
			var oe *runtime.OutputError
			require.ErrorAs(t, err, &oe)
			assert.Equal(t, refusal, oe.Refusal)
			assert.Equal(t, 1, srv.hits(), "a refusal is not retried")
		})
	}
}

// TestWireBodyResponseFormat checks the body assembled from cached bytes
// against go-openai's own encoding and the OpenAPI spec, with a
// response_format, and that the cached skeleton follows the output: added,
// changed, removed.
func TestWireBodyResponseFormat(t *testing.T) {
	route := chatRoute(t)
	schema := json.RawMessage(`{"type":"object","properties":{"a":{"type":["string","null"]}},"required":["a"],"additionalProperties":false}`)
	spec := &llm.OutputSpec{Name: "answer", Description: "The answer.", Type: "main.T", Schema: schema, Mode: llm.OutputNative}
	other := *spec
	other.Name = "other"
	tool := *spec
	tool.Mode = llm.OutputTool
	m := New(Config{Model: "gpt-4o"})
	for _, out := range []*llm.OutputSpec{spec, spec, &other, nil, &tool, spec} {
		for _, stream := range []bool{false, true} {
			req := &llm.Request{System: "sys", Messages: []defs.Message{defs.UserMessage("hi")}, Tools: []llm.ToolSpec{weatherTool}, Output: out}
			want := goOpenAIBody(t, New(Config{Model: "gpt-4o"}), req, stream)
			got := assembled(t, m, req, stream)
			assert.Equal(t, string(want), string(got))
			require.NoError(t, validateChatRequest(route, got))
			var body map[string]any
			require.NoError(t, json.Unmarshal(got, &body))
			rf, has := body["response_format"].(map[string]any)
			if out == nil || out.Mode != llm.OutputNative {
				assert.False(t, has, "no response_format for %+v", out)
				continue
			}
			require.True(t, has)
			assert.Equal(t, out.Name, rf["json_schema"].(map[string]any)["name"])
		}
	}
}
