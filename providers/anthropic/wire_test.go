package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
)

// sdkBody is the body the SDK itself encodes for req: the reference the
// assembled bodies are checked against.
func sdkBody(t *testing.T, m *Model, req *llm.Request) []byte {
	t.Helper()
	p, err := m.params(req)
	require.NoError(t, err, "params")
	b, err := p.MarshalJSON()
	require.NoError(t, err, "the SDK's encoding")
	return b
}

// assembled is the body the adapter sends for req.
func assembled(t *testing.T, m *Model, req *llm.Request) []byte {
	t.Helper()
	b, err := m.body(req)
	require.NoError(t, err, "body")
	return b
}

// requireSameBytes fails unless got is want, byte for byte, and shows
// where they part.
func requireSameBytes(t *testing.T, want, got []byte, format string, args ...any) {
	t.Helper()
	if bytes.Equal(want, got) {
		return
	}
	k := 0
	for k < min(len(want), len(got)) && want[k] == got[k] {
		k++
	}
	require.Failf(t, "body differs from the SDK's encoding", "%s: first difference at byte %d:\nsdk:      %.300s\nadapter:  %.300s",
		fmt.Sprintf(format, args...), k, want[k:], got[k:])
}

var (
	toolA = llm.ToolSpec{Name: "get_weather", Description: "The weather <in> a city & more.", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"alpha":{"type":"string"}},"required":["city"],"additionalProperties":false}`)}
	toolB = llm.ToolSpec{Name: "noop", Parameters: json.RawMessage(` `)}
)

// thinkingMeta is the Meta of an assistant message with a thinking and a
// redacted thinking block.
var thinkingMeta = map[string]string{MetaThinking: `[{"type":"thinking","thinking":"Let me <think> \u2028 about it.","signature":"EqQBCgIYAhIM"},{"type":"redacted_thinking","data":"EmwKAhgBEgy3"}]`}

// variedTranscript holds what the mapping treats apart: leading system
// messages, merged turns, tool results (failed, empty), thinking blocks
// alone and before calls, odd text (HTML, U+2028, invalid UTF-8), blank
// messages, later system messages, and arguments that are not an object.
func variedTranscript() []defs.Message {
	return []defs.Message{
		{Role: defs.RoleSystem, Content: "Today is <Monday> & sunny."},
		{Role: defs.RoleSystem, Content: "  "},
		defs.UserMessage("Weather in Paris\u2028and \"Rome\"? \xff <b>"),
		defs.UserMessage("   "),
		defs.UserMessage("Please."),
		{Role: defs.RoleAssistant, Content: "I'll check.", Meta: thinkingMeta, ToolCalls: []defs.ToolCall{
			{ID: "toolu_1", Name: "get_weather", Arguments: json.RawMessage(`{"city": "Paris", "n": 1e3}`)},
			{ID: "toolu_2", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Ro`)},
		}},
		{Role: defs.RoleTool, ToolCallID: "toolu_1", Name: "get_weather", Content: "18°C <sunny>"},
		{Role: defs.RoleTool, ToolCallID: "toolu_2", Name: "get_weather", Content: "no such city", IsError: true},
		{Role: defs.RoleSystem, Content: "Be brief."},
		{Role: defs.RoleAssistant, Meta: map[string]string{MetaThinking: `[{"type":"redacted_thinking","data":"abc"}]`}},
		{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: "toolu_3", Name: "noop", Arguments: json.RawMessage(`[1]`)}}},
		{Role: defs.RoleTool, ToolCallID: "toolu_3", Name: "noop"},
		{Role: defs.RoleAssistant, Content: "Done."},
		defs.UserMessage("Thanks."),
	}
}

// TestWireBodyMatchesSDK checks the assembled body against the SDK's own
// encoding of the same parameters, byte for byte, on varied requests and
// configurations, the second time from the cache.
func TestWireBodyMatchesSDK(t *testing.T) {
	yes := true
	native := &llm.OutputSpec{Name: "answer", Mode: llm.OutputNative, Schema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)}
	tests := []struct {
		name string
		cfg  Config
		req  llm.Request
	}{
		{"varied transcript, tools", Config{}, llm.Request{System: "You are <helpful>.", Messages: variedTranscript(), Tools: []llm.ToolSpec{toolA, toolB}}},
		{"one hour cache, thinking", Config{Cache: Cache1h, ThinkingBudget: 2048, MaxTokens: 4096}, llm.Request{System: "sys", Messages: variedTranscript(), Tools: []llm.ToolSpec{toolA}}},
		{"cache off, adaptive thinking, effort", Config{Cache: CacheOff, AdaptiveThinking: true, Effort: "low", StopSequences: []string{"END", "<stop>"}}, llm.Request{Messages: variedTranscript()[2:]}},
		{"native output", Config{NativeOutput: &yes, Model: "claude-opus-4-5"}, llm.Request{System: "s", Messages: variedTranscript()[2:5], Output: native}},
		{"tools only: the breakpoint on the last tool", Config{}, llm.Request{Messages: variedTranscript()[4:], Tools: []llm.ToolSpec{toolB, toolA}}},
		{"system only", Config{}, llm.Request{System: "only"}},
		{"leading system messages only", Config{}, llm.Request{Messages: variedTranscript()[:2]}},
		{"nothing", Config{}, llm.Request{}},
		{"an assistant turn first", Config{}, llm.Request{Messages: variedTranscript()[9:]}},
		{"thinking alone last", Config{}, llm.Request{Messages: variedTranscript()[2:10]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(tt.cfg)
			want := sdkBody(t, m, &tt.req)
			for i := range 2 {
				requireSameBytes(t, want, assembled(t, m, &tt.req), "call %d", i+1)
			}
			_, err := decodeStrictBody(want)
			require.NoError(t, err, "the SDK's own body")
		})
	}
}

// decodeStrictBody checks that a body decodes into the SDK's request type
// with no unknown field.
func decodeStrictBody(body []byte) (sdk.MessageNewParams, error) {
	var p sdk.MessageNewParams
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	return p, dec.Decode(&p)
}

// TestWireCacheGrowth sends a growing transcript, then rewrites it the
// ways trimming and compaction do, and a caller mutating its own slices:
// each body is the SDK's encoding, only blocks not seen before are
// encoded (and a block's marked form once), and the bytes before the
// previous request's last breakpoint stay the same from step to step, so
// that the server's prompt cache matches them.
func TestWireCacheGrowth(t *testing.T) {
	m := New(Config{})
	msgs := []defs.Message{defs.UserMessage("Count.")}
	var prev []byte
	check := func(name string, msgs []defs.Message, maxEncoded int) []byte {
		t.Helper()
		req := &llm.Request{System: "You count.", Messages: msgs, Tools: []llm.ToolSpec{toolA}}
		before := m.enc.encoded
		got := assembled(t, m, req)
		requireSameBytes(t, sdkBody(t, New(Config{}), req), got, "%s", name)
		assert.LessOrEqual(t, m.enc.encoded-before, maxEncoded, "%s: blocks encoded", name)
		return got
	}
	prev = check("first", msgs, 2)
	for i := range 8 {
		id := fmt.Sprintf("toolu_%d", i)
		msgs = append(msgs,
			defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: id, Name: "get_weather", Arguments: json.RawMessage(`{}`)}}},
			defs.Message{Role: defs.RoleTool, ToolCallID: id, Content: fmt.Sprint(i + 1)})
		// The two new blocks, and the result's marked form.
		got := check(fmt.Sprintf("step %d", i+1), msgs, 3)
		// The breakpoints move (the one two requests back goes), the
		// rest stays: the previous request's transcript opens this one.
		p, g := unmarked(prev), unmarked(got)
		end := bytes.Index(p, []byte(`}],"model"`)) + 1
		require.Positive(t, end, "the end of the previous request's messages")
		assert.Equal(t, string(p[:end]), string(g[:end]), "step %d: the previous request's transcript, breakpoints aside", i+1)
		prev = got
	}
	check("same again", msgs, 0)
	// An earlier request, and a rewrite, mark blocks that the last
	// request did not: their marked encodings were dropped (see
	// encoder.marked), and are made again.
	check("an earlier request (a retry)", msgs[:5], 2)

	// The caller rewrites its own slices: a message replaced in place,
	// and a tool call's arguments changed in place.
	edited := append([]defs.Message(nil), msgs...)
	edited[2] = defs.Message{Role: defs.RoleTool, ToolCallID: "toolu_0", Content: "one"}
	check("a result replaced", edited, 3)
	args := []byte(`{"a":1}`)
	edited[1] = defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: "toolu_0", Name: "get_weather", Arguments: args}}}
	check("arguments", edited, 2)
	copy(args, `{"b":2}`)
	check("arguments changed in place", edited, 1)

	check("trim the oldest rounds", append([]defs.Message{msgs[0]}, msgs[5:]...), 1)
	check("compaction", append([]defs.Message{msgs[0], defs.UserMessage("Summary: counted to 4.")}, msgs[9:]...), 2)

	// A rewrite holding a message twice: each place has its own
	// breakpoints (here the second "yes" only).
	fresh := New(Config{})
	for _, msgs := range [][]defs.Message{
		{defs.UserMessage("Count."), defs.UserMessage("yes")},
		{defs.UserMessage("Count."), defs.UserMessage("other"), defs.UserMessage("yes"), {Role: defs.RoleAssistant, Content: "t"},
			defs.UserMessage("more"), {Role: defs.RoleAssistant, Content: "t2"}, defs.UserMessage("yes")},
	} {
		req := &llm.Request{Messages: msgs}
		requireSameBytes(t, sdkBody(t, fresh, req), assembled(t, fresh, req), "a message twice, %d messages", len(msgs))
	}

	// System prompt, tools and configuration changes make a new skeleton.
	req := &llm.Request{System: "You count, again.", Messages: msgs, Tools: []llm.ToolSpec{toolA, toolB}}
	requireSameBytes(t, sdkBody(t, m, req), assembled(t, m, req), "new system prompt and tools")
	req.Messages = append([]defs.Message{{Role: defs.RoleSystem, Content: "lead"}}, msgs...)
	requireSameBytes(t, sdkBody(t, m, req), assembled(t, m, req), "a leading system message")

	// The system prompt changes from step to step (the runtime renders
	// state in it), or goes: the tools are not encoded again.
	for i, sys := range []string{"state: 1", "", "state: <2> & \u2028", "", "state: 1"} {
		req := &llm.Request{System: sys, Messages: msgs, Tools: []llm.ToolSpec{toolA, toolB}}
		before := m.enc.encoded
		requireSameBytes(t, sdkBody(t, m, req), assembled(t, m, req), "system prompt %d: %q", i, sys)
		assert.LessOrEqual(t, m.enc.encoded-before, 2, "system prompt %d: blocks encoded", i)
	}
}

// unmarked returns b without its cache_control fields.
func unmarked(b []byte) []byte {
	return regexp.MustCompile(`"cache_control":\{[^{}]*\},?`).ReplaceAll(b, nil)
}

// TestWireLanes runs conversations that share a Model, in turn and at
// once: each body is the SDK's encoding.
func TestWireLanes(t *testing.T) {
	m := New(Config{})
	conv := func(k, n int) *llm.Request {
		msgs := []defs.Message{defs.UserMessage(fmt.Sprintf("Task %d.", k))}
		for i := range n {
			id := fmt.Sprintf("toolu_%d_%d", k, i)
			msgs = append(msgs,
				defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: id, Name: "noop", Arguments: json.RawMessage(`{}`)}}},
				defs.Message{Role: defs.RoleTool, ToolCallID: id, Content: "ok"})
		}
		return &llm.Request{System: "sys", Messages: msgs, Tools: []llm.ToolSpec{toolB}}
	}
	for n := range 4 {
		for k := range maxLanes + 2 {
			req := conv(k, n)
			requireSameBytes(t, sdkBody(t, New(Config{}), req), assembled(t, m, req), "conversation %d, step %d", k, n)
		}
	}
	var wg sync.WaitGroup
	for k := range 8 {
		wg.Go(func() {
			for n := range 6 {
				req := conv(k, n)
				want, err := New(Config{}).params(req)
				if !assert.NoError(t, err) {
					return
				}
				wb, err := want.MarshalJSON()
				assert.NoError(t, err)
				got, err := m.body(req)
				assert.NoError(t, err)
				assert.Equal(t, string(wb), string(got), "conversation %d, step %d, concurrently", k, n)
			}
		})
	}
	wg.Wait()
}

// TestWireSentAsSDK sends requests through Generate and Stream and
// through the SDK with params(req), to a server that records the bodies:
// the adapter's are the SDK's, "stream" included.
func TestWireSentAsSDK(t *testing.T) {
	var mu sync.Mutex
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		mu.Unlock()
		if strings.Contains(string(b), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`)
	}))
	defer srv.Close()
	last := func() []byte {
		mu.Lock()
		defer mu.Unlock()
		return bodies[len(bodies)-1]
	}
	m := New(Config{BaseURL: srv.URL, ThinkingBudget: 1024, MaxTokens: 2048})
	client := sdk.NewClient(option.WithoutEnvironmentDefaults(), option.WithBaseURL(srv.URL+"/"), option.WithMaxRetries(0))
	req := &llm.Request{System: "You are <helpful>.", Messages: variedTranscript(), Tools: []llm.ToolSpec{toolA, toolB}}
	p, err := m.params(req)
	require.NoError(t, err)
	ctx := context.Background()

	_, err = client.Messages.New(ctx, p)
	require.NoError(t, err)
	want := last()
	_, err = m.Generate(ctx, req)
	require.NoError(t, err)
	requireSameBytes(t, want, last(), "Generate")

	stream := client.Messages.NewStreaming(ctx, p)
	for stream.Next() {
	}
	require.NoError(t, stream.Err())
	want = last()
	assert.True(t, bytes.HasSuffix(want, []byte(`,"stream":true}`)), "the SDK's streamed body: %.100s", want[max(0, len(want)-100):])
	_, err = m.Stream(ctx, req, nil)
	require.NoError(t, err)
	requireSameBytes(t, want, last(), "Stream")
}

// BenchmarkBody assembles the body of a 14-message request with 4 tools,
// its system prompt the same at every call or new at every call (as the
// runtime renders state in it), beside the SDK's own encoding of it:
//
//	go test ./providers/anthropic -run '^$' -bench Body -count 6
func BenchmarkBody(b *testing.B) {
	msgs := variedTranscript()
	tools := []llm.ToolSpec{toolA, toolB, toolA, toolB}
	for _, changing := range []bool{false, true} {
		b.Run(fmt.Sprintf("system=%s", map[bool]string{false: "same", true: "new"}[changing]), func(b *testing.B) {
			m := New(Config{})
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if changing {
					i++
				}
				_, err := m.body(&llm.Request{System: "You count. <state>" + strconv.Itoa(i) + "</state>", Messages: msgs, Tools: tools})
				require.NoError(b, err)
			}
		})
	}
	b.Run("sdk", func(b *testing.B) {
		m := New(Config{})
		b.ReportAllocs()
		for b.Loop() {
			p, err := m.params(&llm.Request{System: "You count. <state>0</state>", Messages: msgs, Tools: tools})
			require.NoError(b, err)
			_, err = p.MarshalJSON()
			require.NoError(b, err)
		}
	})
}

// TestWireRandomTranscripts grows, rewrites and switches transcripts at
// random (messages of every kind, blank and repeated ones, system
// prompts that change or go, tools that change, two conversations on one
// Model, three cache settings) and checks every body against the SDK's
// encoding of the same request, byte for byte.
func TestWireRandomTranscripts(t *testing.T) {
	for seed := range uint64(6) {
		r := rand.New(rand.NewPCG(seed, 24))
		cache := []CacheTTL{Cache5m, Cache1h, CacheOff}[seed%3]
		m, ref := New(Config{Cache: cache}), New(Config{Cache: cache})
		pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
		var pool []defs.Message // messages seen, to repeat
		newMessage := func(i int) defs.Message {
			if len(pool) > 0 && r.IntN(6) == 0 {
				return pool[r.IntN(len(pool))]
			}
			var msg defs.Message
			switch r.IntN(6) {
			case 0, 1:
				msg = defs.UserMessage(pick("yes", "go on", " ", "<b>&\u2028", fmt.Sprint("note ", i)))
			case 2:
				msg = defs.Message{Role: defs.RoleTool, ToolCallID: fmt.Sprint("toolu_", r.IntN(5)), Content: pick("", "ok", "18°C"), IsError: r.IntN(4) == 0}
			case 3:
				msg = defs.Message{Role: defs.RoleSystem, Content: pick("later system", "")}
			default:
				msg = defs.Message{Role: defs.RoleAssistant, Content: pick("", "Sure.", "Done <x>.")}
				for range r.IntN(3) {
					msg.ToolCalls = append(msg.ToolCalls, defs.ToolCall{ID: fmt.Sprint("toolu_", r.IntN(5)), Name: "get_weather", Arguments: json.RawMessage(pick(`{}`, `{"city":"Paris"}`, `[1]`, ``))})
				}
				if r.IntN(3) == 0 {
					msg.Meta = thinkingMeta
				}
			}
			pool = append(pool, msg)
			return msg
		}
		convs := [2][]defs.Message{{defs.UserMessage("first A")}, {{Role: defs.RoleSystem, Content: "lead B"}, defs.UserMessage("first B")}}
		for i := range 150 {
			c := &convs[r.IntN(2)]
			msgs := *c
			switch op := r.IntN(10); {
			case op < 6: // growth
				for range 1 + r.IntN(3) {
					msgs = append(msgs, newMessage(i))
				}
			case op < 7 && len(msgs) > 3: // trim after the first message
				k := 1 + r.IntN(len(msgs)-2)
				msgs = append(slices.Clone(msgs[:1]), msgs[k:]...)
			case op < 8 && len(msgs) > 2: // replace one in place (a new slice)
				msgs = slices.Clone(msgs)
				msgs[1+r.IntN(len(msgs)-1)] = newMessage(i)
			case op < 9 && len(msgs) > 2: // an earlier request again
				msgs = msgs[:1+r.IntN(len(msgs)-1)]
			}
			*c = msgs
			req := &llm.Request{System: pick("", "You help.", fmt.Sprint("state ", r.IntN(3))), Messages: msgs}
			if r.IntN(2) == 0 { // the runtime's hints, which place breakpoints mid-transcript
				req.Repeated, req.Committed = r.IntN(len(msgs)+1), r.IntN(len(msgs)+1)
			}
			if r.IntN(4) > 0 {
				req.Tools = []llm.ToolSpec{toolA, toolB}[:1+r.IntN(2)]
			}
			requireSameBytes(t, sdkBody(t, ref, req), assembled(t, m, req), "seed %d, request %d", seed, i)
		}
	}
}

// TestWireRetrySendsSameBody: a retried attempt sends the body of the
// first, streamed or not (the SDK adds "stream" to a copy).
func TestWireRetrySendsSameBody(t *testing.T) {
	var mu sync.Mutex
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		n := len(bodies)
		mu.Unlock()
		if n%2 == 1 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(529)
			io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
			return
		}
		if bytes.Contains(b, []byte(`"stream":true`)) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`)
	}))
	defer srv.Close()
	m := New(Config{BaseURL: srv.URL, MaxRetries: 1, Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	req := &llm.Request{System: "sys", Messages: variedTranscript(), Tools: []llm.ToolSpec{toolA}}
	_, err := m.Generate(context.Background(), req)
	require.NoError(t, err)
	_, err = m.Stream(context.Background(), req, nil)
	require.NoError(t, err)
	require.Len(t, bodies, 4, "two attempts each")
	requireSameBytes(t, bodies[0], bodies[1], "Generate's retry")
	requireSameBytes(t, bodies[2], bodies[3], "Stream's retry")
	requireSameBytes(t, append(bytes.TrimSuffix(bodies[0], []byte("}")), `,"stream":true}`...), bodies[2], "the streamed body")
}
