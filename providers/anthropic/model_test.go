package anthropic_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/providers/anthropic"
)

var weatherTool = llm.ToolSpec{
	Name:        "get_weather",
	Description: "The weather in a city.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`),
}

func TestGenerateText(t *testing.T) {
	srv := newServer(t, ok(t, "text.json"))
	m := srv.model(anthropic.Config{Model: "claude-sonnet-4-5", MaxTokens: 1024, StopSequences: []string{"END"}}, nil)
	reply, err := m.Generate(context.Background(), &llm.Request{
		System:   "You answer in one word.",
		Messages: []defs.Message{defs.UserMessage("Capital of France?")},
	})
	require.NoError(t, err)
	want := &llm.Reply{
		ID:           "msg_01XFDUDYJgAACzvnptvVoYEL",
		Message:      defs.Message{Role: defs.RoleAssistant, Content: "Paris."},
		FinishReason: llm.FinishStop,
		Usage:        llm.Usage{InputTokens: 21, OutputTokens: 5},
	}
	assert.Empty(t, cmp.Diff(want, reply), "reply (-want +got)")
	assert.Equal(t, 1, srv.attempts(), "attempts")

	r := srv.request(0)
	assert.False(t, r.stream, "Generate does not stream")
	assert.Equal(t, "Bearer "+testKey, r.header.Get("Authorization"), "the key, as the SDK sends it")
	wantBody := jsonOf(t, `{
		"model": "claude-sonnet-4-5",
		"max_tokens": 1024,
		"stop_sequences": ["END"],
		"system": [{"type":"text","text":"You answer in one word.","cache_control":{"type":"ephemeral"}}],
		"messages": [{"role":"user","content":[{"type":"text","text":"Capital of France?","cache_control":{"type":"ephemeral"}}]}]
	}`)
	assert.Empty(t, cmp.Diff(wantBody, any(r.raw)), "request body (-want +got)")
}

// TestToolTurns sends tools, gets two parallel tool calls, and sends their
// results back: tool results become tool_result blocks of one user
// message, which the user's next words join (the API wants alternating
// roles), and leading system messages join the system prompt.
func TestToolTurns(t *testing.T) {
	srv := newServer(t, ok(t, "parallel_tools.json"), ok(t, "text.json"))
	m := srv.model(anthropic.Config{}, nil)
	msgs := []defs.Message{
		{Role: defs.RoleSystem, Content: "Today is Monday."},
		defs.UserMessage("Weather in Paris and Rome?"),
	}
	req := &llm.Request{System: "You are a weather bot.", Messages: msgs, Tools: []llm.ToolSpec{weatherTool}}
	reply, err := m.Generate(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, llm.FinishToolCalls, reply.FinishReason)
	wantCalls := []defs.ToolCall{
		{ID: "toolu_01A09q90qw90lq917835lq9", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
		{ID: "toolu_01B18r81rx81mr826946mr8", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Rome"}`)},
	}
	assert.Empty(t, cmp.Diff(wantCalls, reply.Message.ToolCalls), "tool calls (-want +got)")
	assert.Equal(t, "I'll check both cities.", reply.Message.Content)

	r0 := srv.request(0)
	assert.Empty(t, cmp.Diff(jsonOf(t, `[
		{"type":"text","text":"You are a weather bot."},
		{"type":"text","text":"Today is Monday.","cache_control":{"type":"ephemeral"}}
	]`), r0.raw["system"]), "system (-want +got)")
	assert.Empty(t, cmp.Diff(jsonOf(t, `[{"name":"get_weather","description":"The weather in a city.",
		"input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}}]`), r0.raw["tools"]), "tools (-want +got)")

	msgs = append(msgs, reply.Message,
		defs.ToolResult{CallID: wantCalls[0].ID, Name: "get_weather", Content: "18°C"}.Message(),
		defs.ToolResult{CallID: wantCalls[1].ID, Name: "get_weather", Content: "no such city", IsError: true}.Message(),
		defs.UserMessage("Thanks."))
	_, err = m.Generate(context.Background(), &llm.Request{System: req.System, Messages: msgs, Tools: req.Tools})
	require.NoError(t, err)
	r1 := srv.request(1)
	wantMsgs := jsonOf(t, `[
		{"role":"user","content":[{"type":"text","text":"Weather in Paris and Rome?","cache_control":{"type":"ephemeral"}}]},
		{"role":"assistant","content":[
			{"type":"text","text":"I'll check both cities."},
			{"type":"tool_use","id":"toolu_01A09q90qw90lq917835lq9","name":"get_weather","input":{"city":"Paris"}},
			{"type":"tool_use","id":"toolu_01B18r81rx81mr826946mr8","name":"get_weather","input":{"city":"Rome"}}]},
		{"role":"user","content":[
			{"type":"tool_result","tool_use_id":"toolu_01A09q90qw90lq917835lq9","content":[{"type":"text","text":"18°C"}]},
			{"type":"tool_result","tool_use_id":"toolu_01B18r81rx81mr826946mr8","is_error":true,"content":[{"type":"text","text":"no such city"}]},
			{"type":"text","text":"Thanks.","cache_control":{"type":"ephemeral"}}]}
	]`)
	assert.Empty(t, cmp.Diff(wantMsgs, r1.raw["messages"]), "messages of the second request (-want +got)")
}

// TestThinkingAcrossToolTurn keeps thinking blocks with their signatures
// (and a redacted one) and sends them back, unchanged and first, in the
// assistant turn the tool result answers; streamed or not.
func TestThinkingAcrossToolTurn(t *testing.T) {
	for _, tc := range []struct {
		name, fixture string
		stream        bool
	}{
		{"generate", "thinking_tool.json", false},
		{"stream", "stream_thinking_tool.sse", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, ok(t, tc.fixture), ok(t, "text.json"))
			m := srv.model(anthropic.Config{ThinkingBudget: 2048, MaxTokens: 4096}, nil)
			msgs := []defs.Message{defs.UserMessage("Weather in Paris?")}
			req := &llm.Request{Messages: msgs, Tools: []llm.ToolSpec{weatherTool}}
			var reply *llm.Reply
			var err error
			var reasoning string
			if tc.stream {
				reply, err = m.Stream(context.Background(), req, func(d llm.Delta) { reasoning += d.Reasoning })
			} else {
				reply, err = m.Generate(context.Background(), req)
			}
			require.NoError(t, err)
			assert.Equal(t, "The user wants the weather in Paris. I should call get_weather.", reply.Message.Reasoning)
			if tc.stream {
				assert.Equal(t, reply.Message.Reasoning, reasoning, "reasoning deltas")
			} else {
				assert.Equal(t, 90, reply.Usage.ReasoningTokens, "thinking tokens")
			}
			require.Contains(t, reply.Message.Meta, anthropic.MetaThinking)
			assert.Empty(t, cmp.Diff(jsonOf(t, `{"type":"enabled","budget_tokens":2048}`), srv.request(0).raw["thinking"]), "thinking config (-want +got)")

			msgs = append(msgs, reply.Message, defs.ToolResult{CallID: "toolu_01CswdEQBMshySk6Y9DFKrfq", Content: "18°C"}.Message())
			_, err = m.Generate(context.Background(), &llm.Request{Messages: msgs, Tools: req.Tools})
			require.NoError(t, err)
			wantAssistant := jsonOf(t, `{"role":"assistant","content":[
				{"type":"thinking","thinking":"The user wants the weather in Paris. I should call get_weather.","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"},`+
				redacted(tc.stream)+`
				{"type":"tool_use","id":"toolu_01CswdEQBMshySk6Y9DFKrfq","name":"get_weather","input":{"city":"Paris"}}]}`)
			got := srv.request(1).raw["messages"].([]any)
			require.Len(t, got, 3)
			assert.Empty(t, cmp.Diff(wantAssistant, got[1]), "assistant turn sent back (-want +got)")
		})
	}
}

// redacted is the redacted_thinking block of the non-streamed fixture.
func redacted(stream bool) string {
	if stream {
		return ""
	}
	return `{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"},`
}

// TestStreamDeltas streams text and two parallel tool calls: each piece
// reaches onDelta as it arrives, and the assembled reply is what Generate
// returns for the same message.
func TestStreamDeltas(t *testing.T) {
	srv := newServer(t, ok(t, "stream_parallel_tools.sse"), ok(t, "parallel_tools.json"))
	m := srv.model(anthropic.Config{}, nil)
	req := &llm.Request{Messages: []defs.Message{defs.UserMessage("Weather in Paris and Rome?")}, Tools: []llm.ToolSpec{weatherTool}}
	var deltas []llm.Delta
	streamed, err := m.Stream(context.Background(), req, func(d llm.Delta) { deltas = append(deltas, d) })
	require.NoError(t, err)
	assert.True(t, srv.request(0).stream, `"stream": true`)
	wantDeltas := []llm.Delta{
		{Content: "I'll check both cities."},
		{ToolCall: &llm.ToolCallDelta{Index: 0, ID: "toolu_01A09q90qw90lq917835lq9", Name: "get_weather"}},
		{ToolCall: &llm.ToolCallDelta{Index: 0, Arguments: `{"city": `}},
		{ToolCall: &llm.ToolCallDelta{Index: 0, Arguments: `"Paris"}`}},
		{ToolCall: &llm.ToolCallDelta{Index: 1, ID: "toolu_01B18r81rx81mr826946mr8", Name: "get_weather"}},
		{ToolCall: &llm.ToolCallDelta{Index: 1, Arguments: `{"city":`}},
		{ToolCall: &llm.ToolCallDelta{Index: 1, Arguments: ` "Rome"}`}},
	}
	assert.Empty(t, cmp.Diff(wantDeltas, deltas), "deltas (-want +got)")

	generated, err := m.Generate(context.Background(), req)
	require.NoError(t, err)
	generated.ID = streamed.ID
	for i := range generated.Message.ToolCalls { // the stream's arguments keep the model's spacing
		var a, b any
		require.NoError(t, json.Unmarshal(streamed.Message.ToolCalls[i].Arguments, &a))
		require.NoError(t, json.Unmarshal(generated.Message.ToolCalls[i].Arguments, &b))
		assert.Equal(t, b, a, "arguments of call %d", i)
		streamed.Message.ToolCalls[i].Arguments = generated.Message.ToolCalls[i].Arguments
	}
	assert.Empty(t, cmp.Diff(generated, streamed), "streamed reply against the generated one (-want +got)")
}

func TestStreamText(t *testing.T) {
	srv := newServer(t, ok(t, "stream_text.sse"))
	m := srv.model(anthropic.Config{}, nil)
	var text string
	reply, err := m.Stream(context.Background(), &llm.Request{Messages: []defs.Message{defs.UserMessage("Capital of France?")}},
		func(d llm.Delta) { text += d.Content })
	require.NoError(t, err)
	assert.Equal(t, "Paris.", text, "text deltas")
	want := &llm.Reply{ID: "msg_01StreamText", Message: defs.Message{Role: defs.RoleAssistant, Content: "Paris."},
		FinishReason: llm.FinishStop, Usage: llm.Usage{InputTokens: 21, OutputTokens: 5}}
	assert.Empty(t, cmp.Diff(want, reply), "reply (-want +got)")
}

// TestCacheUsage maps cache reads and writes (with the part written for
// an hour) into llm.Usage: Anthropic counts them apart from input_tokens,
// llm.Usage within InputTokens.
func TestCacheUsage(t *testing.T) {
	srv := newServer(t, ok(t, "cache_usage.json"))
	m := srv.model(anthropic.Config{Cache: anthropic.Cache1h}, nil)
	reply, err := m.Generate(context.Background(), &llm.Request{System: "s", Messages: []defs.Message{defs.UserMessage("hi")}})
	require.NoError(t, err)
	want := llm.Usage{InputTokens: 50 + 3000 + 1200, OutputTokens: 8, CachedTokens: 3000, CacheWriteTokens: 1200, CacheWrite1hTokens: 1000}
	assert.Empty(t, cmp.Diff(want, reply.Usage), "usage (-want +got)")
	assert.Empty(t, cmp.Diff(jsonOf(t, `[{"type":"text","text":"s","cache_control":{"type":"ephemeral","ttl":"1h"}}]`), srv.request(0).raw["system"]),
		"a 1-hour breakpoint (-want +got)")
}

// TestBreakpoints checks where cache_control goes: after the tools and
// system prompt; where the previous request had one that this one repeats
// (Request.Repeated), or else at the end of the previous step's request
// (the turn before the last assistant turn); at the end of the committed
// part (Request.Committed), even inside a turn; and at the end of the
// transcript; never on a thinking block, never more than four; none with
// CacheOff.
func TestBreakpoints(t *testing.T) {
	thinking := `[{"type":"thinking","thinking":"hmm","signature":"sig"}]`
	msgs := []defs.Message{
		defs.UserMessage("one"),
		{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: "t1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}}},
		defs.ToolResult{CallID: "t1", Content: "18°C"}.Message(),
		{Role: defs.RoleAssistant, Meta: map[string]string{anthropic.MetaThinking: thinking},
			ToolCalls: []defs.ToolCall{{ID: "t2", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Rome"}`)}}},
		defs.ToolResult{CallID: "t2", Content: "20°C"}.Message(),
	}
	marks := func(r received) []string {
		var at []string
		var walk func(path string, v any)
		walk = func(path string, v any) {
			switch v := v.(type) {
			case map[string]any:
				if _, ok := v["cache_control"]; ok {
					at = append(at, path)
				}
				for k, x := range v {
					if k != "cache_control" {
						walk(path+"."+k, x)
					}
				}
			case []any:
				for i, x := range v {
					walk(path+"["+string(rune('0'+i))+"]", x)
				}
			}
		}
		for _, k := range []string{"tools", "system", "messages"} {
			walk(k, r.raw[k])
		}
		return at
	}
	parallel := []defs.Message{
		defs.UserMessage("one"),
		{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: "t1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
			{ID: "t2", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Rome"}`)}}},
		defs.ToolResult{CallID: "t1", Content: "18°C"}.Message(),
		defs.ToolResult{CallID: "t2", Content: "20°C"}.Message(),
	}
	for _, tc := range []struct {
		name                string
		cfg                 anthropic.Config
		system              string
		msgs                []defs.Message // msgs if nil
		committed, repeated int
		want                []string
	}{
		{"with system", anthropic.Config{}, "sys", nil, 0, 0, []string{"system[0]", "messages[2].content[0]", "messages[4].content[0]"}},
		{"tools only", anthropic.Config{}, "", nil, 0, 0, []string{"tools[0]", "messages[2].content[0]", "messages[4].content[0]"}},
		{"off", anthropic.Config{Cache: anthropic.CacheOff}, "sys", nil, 0, 0, nil},
		// The previous request's committed part ended after the first
		// call, this one's after the second (its tool_use block, not
		// its thinking): t2's result will be rewritten.
		{"committed part", anthropic.Config{}, "sys", nil, 4, 2, []string{"system[0]", "messages[1].content[0]", "messages[3].content[1]", "messages[4].content[0]"}},
		{"committed, tools only", anthropic.Config{}, "", nil, 4, 2, []string{"tools[0]", "messages[1].content[0]", "messages[3].content[1]", "messages[4].content[0]"}},
		// All of it committed, and the whole previous request repeated.
		{"all committed", anthropic.Config{}, "sys", nil, 5, 3, []string{"system[0]", "messages[2].content[0]", "messages[4].content[0]"}},
		// Parallel results share a turn: the committed part ends on
		// the first result's block.
		{"committed inside a turn", anthropic.Config{}, "sys", parallel, 3, 1, []string{"system[0]", "messages[0].content[0]", "messages[2].content[0]", "messages[2].content[1]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, ok(t, "text.json"))
			in := msgs
			if tc.msgs != nil {
				in = tc.msgs
			}
			_, err := srv.model(tc.cfg, nil).Generate(context.Background(), &llm.Request{System: tc.system, Messages: in, Tools: []llm.ToolSpec{weatherTool},
				Committed: tc.committed, Repeated: tc.repeated})
			require.NoError(t, err)
			assert.ElementsMatch(t, tc.want, marks(srv.request(0)), "cache_control marks")
		})
	}
}

// TestNativeOutput sends a typed answer's schema as output_config.format
// when the runtime asks for it natively, and says which models take it.
func TestNativeOutput(t *testing.T) {
	srv := newServer(t, answer{status: 200, body: `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"{\"label\":\"bug\"}"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":30,"output_tokens":6}}`})
	m := srv.model(anthropic.Config{Effort: "low"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{"label":{"type":"string","enum":["bug","feature"]}},"required":["label"],"additionalProperties":false}`)
	reply, err := m.Generate(context.Background(), &llm.Request{
		Messages: []defs.Message{defs.UserMessage("Triage: it crashes.")},
		Output:   &llm.OutputSpec{Name: "triage", Type: "main.Triage", Schema: schema, Mode: llm.OutputNative},
	})
	require.NoError(t, err)
	assert.JSONEq(t, `{"label":"bug"}`, reply.Message.Content)
	want := jsonOf(t, `{"effort":"low","format":{"type":"json_schema","schema":`+string(schema)+`}}`)
	assert.Empty(t, cmp.Diff(want, srv.request(0).raw["output_config"]), "output_config (-want +got)")

	for name, want := range map[string]bool{
		"claude-sonnet-4-5": true, "claude-haiku-4-5-20251001": true, "claude-opus-4-1": true, "claude-opus-4-1-20250805": true,
		"claude-opus-5": true, "claude-sonnet-4-6": true, "claude-sonnet-4-20250514": false, "claude-opus-4": false,
		"claude-3-5-sonnet-20241022": false, "claude-3-7-sonnet-latest": false, "gpt-4o": false,
	} {
		assert.Equal(t, want, anthropic.New(anthropic.Config{Model: name}).NativeOutput(), "NativeOutput of %s", name)
	}
	no := false
	assert.False(t, anthropic.New(anthropic.Config{NativeOutput: &no}).NativeOutput(), "Config.NativeOutput decides")
}

func TestStopReasons(t *testing.T) {
	for stop, want := range map[string]llm.FinishReason{
		"end_turn": llm.FinishStop, "stop_sequence": llm.FinishStop, "tool_use": llm.FinishToolCalls,
		"max_tokens": llm.FinishLength, "model_context_window_exceeded": llm.FinishLength,
		"refusal": llm.FinishContentFilter, "pause_turn": "pause_turn",
	} {
		t.Run(stop, func(t *testing.T) {
			srv := newServer(t, answer{status: 200, body: `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"x"}],"stop_reason":"` + stop + `","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`})
			reply, err := srv.model(anthropic.Config{}, nil).Generate(context.Background(), &llm.Request{Messages: []defs.Message{defs.UserMessage("hi")}})
			require.NoError(t, err)
			assert.Equal(t, want, reply.FinishReason)
			if stop == "refusal" {
				assert.Equal(t, "x", reply.Refusal, "a refusal is reported apart")
			}
		})
	}
}
