package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/internal/scenario"
	"github.com/reprompt/reprompt/providers/openai"
	"github.com/reprompt/reprompt/runtime"
)

// scenarioS1 is scenario S1 of runtime's BenchmarkScenarioS1 (package
// internal/scenario), run through the adapter.
var scenarioS1 = scenario.S1

// s1Server answers S1: a call of increment at each step but the last of a
// run of steps, then text. Its replies are encoded once, so the server
// costs the same for every client. It optionally records the request
// bodies.
type s1Server struct {
	srv     *httptest.Server
	steps   int
	n       atomic.Int64
	replies [][]byte
	mu      sync.Mutex
	record  bool
	bodies  [][]byte
}

func newS1Server(tb testing.TB, steps int) *s1Server {
	s := &s1Server{steps: steps, replies: make([][]byte, steps)}
	for i := range steps {
		msg := fmt.Sprintf(`{"role":"assistant","content":null,"tool_calls":[{"id":"call_%d","type":"function","function":{"name":"increment","arguments":"{}"}}]}`, i)
		finish := "tool_calls"
		if i == steps-1 {
			msg, finish = `{"role":"assistant","content":"Done counting."}`, "stop"
		}
		s.replies[i] = fmt.Appendf(nil, `{"id":"chatcmpl-%d","object":"chat.completion","created":1,"model":"gpt-4.1","choices":[{"index":0,"message":%s,"finish_reason":%q}],"usage":{"prompt_tokens":400,"completion_tokens":10,"total_tokens":410}}`, i, msg, finish)
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(s.srv.Close)
	return s
}

func (s *s1Server) serve(w http.ResponseWriter, r *http.Request) {
	if s.record {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.bodies = append(s.bodies, b)
		s.mu.Unlock()
	} else {
		io.Copy(io.Discard, r.Body)
	}
	i := int(s.n.Add(1)-1) % s.steps
	w.Header().Set("Content-Type", "application/json")
	w.Write(s.replies[i])
}

// runReprompt runs S1 through runtime.Run and the adapter.
func runReprompt(tb testing.TB, s *s1Server, m *openai.Model) {
	s.n.Store(0)
	res, err := runtime.Run(context.Background(), m, scenarioS1, runtime.Config{MaxSteps: s.steps})
	require.NoError(tb, err)
	// A bool and a constant message: benchmarks run this in their
	// measured loop, where the check must not allocate.
	require.True(tb, len(res.Steps) == s.steps, "runtime.Run ran fewer or more steps than the scenario's")
}

// bareS1 is the floor: a plain go-openai loop sending the requests S1
// sends. system and tools are what the runtime renders for S1, taken from
// its first request.
type bareS1 struct {
	client *sdk.Client
	system string
	tools  []sdk.Tool
}

func newBare(tb testing.TB, s *s1Server) *bareS1 {
	// One recorded reprompt step gives the system prompt and the tools.
	rec := newS1Server(tb, 1)
	rec.record = true
	runReprompt(tb, rec, openai.New(openai.Config{BaseURL: rec.srv.URL + "/v1", Model: "gpt-4.1", MaxRetries: -1}))
	var first struct {
		Messages []struct{ Role, Content string }
		Tools    []struct {
			Function struct {
				Name, Description string
				Parameters        json.RawMessage // the bytes as sent
			}
		}
	}
	require.NoError(tb, json.Unmarshal(rec.bodies[0], &first))
	require.Equal(tb, "system", first.Messages[0].Role)
	cfg := sdk.DefaultConfig("")
	cfg.BaseURL = s.srv.URL + "/v1"
	cfg.HTTPClient = &http.Client{}
	var tools []sdk.Tool
	for _, t := range first.Tools {
		f := t.Function
		tools = append(tools, sdk.Tool{Type: sdk.ToolTypeFunction, Function: &sdk.FunctionDefinition{Name: f.Name, Description: f.Description, Parameters: f.Parameters}})
	}
	return &bareS1{client: sdk.NewClientWithConfig(cfg), system: first.Messages[0].Content, tools: tools}
}

// run sends S1's requests: the history grows by the assistant's message
// and the tool's result at each step, and is encoded whole every time.
func (b *bareS1) run(tb testing.TB, s *s1Server) {
	s.n.Store(0)
	msgs := []sdk.ChatCompletionMessage{
		{Role: sdk.ChatMessageRoleSystem, Content: b.system},
		{Role: sdk.ChatMessageRoleUser, Content: "Count as far as you can."},
	}
	count := 0
	for range s.steps {
		resp, err := b.client.CreateChatCompletion(context.Background(), sdk.ChatCompletionRequest{Model: "gpt-4.1", Messages: msgs, Tools: b.tools})
		require.NoError(tb, err)
		msg := resp.Choices[0].Message
		msgs = append(msgs, msg)
		for _, tc := range msg.ToolCalls {
			count++
			msgs = append(msgs, sdk.ChatCompletionMessage{Role: sdk.ChatMessageRoleTool, ToolCallID: tc.ID, Content: strconv.Itoa(count)})
		}
	}
}

// TestWireSameRequestsAsBare checks that the benchmark compares like with
// like: reprompt and the bare loop send the same S1 requests, byte for
// byte.
func TestWireSameRequestsAsBare(t *testing.T) {
	const steps = 25
	s := newS1Server(t, steps)
	s.record = true
	runReprompt(t, s, openai.New(openai.Config{BaseURL: s.srv.URL + "/v1", Model: "gpt-4.1"}))
	ours := s.bodies
	s.bodies = nil
	newBare(t, s).run(t, s)
	bare := s.bodies
	require.Len(t, ours, steps)
	require.Len(t, bare, steps)
	for i := range steps {
		if string(ours[i]) == string(bare[i]) {
			continue
		}
		var a, b any
		require.NoError(t, json.Unmarshal(bare[i], &a))
		require.NoError(t, json.Unmarshal(ours[i], &b))
		k := 0
		for k < min(len(bare[i]), len(ours[i])) && bare[i][k] == ours[i][k] {
			k++
		}
		require.Empty(t, cmp.Diff(a, b), "request %d differs from the bare loop's, first at byte %d (-bare +reprompt)", i, k)
		// The same JSON value, written differently.
		require.Failf(t, "request differs from the bare loop's", "request %d: first difference at byte %d:\nbare:     %.300s\nreprompt: %.300s", i, k, bare[i][k:], ours[i][k:])
	}
}

// BenchmarkWire runs scenario S1 through the adapter against an httptest
// server (reprompt) and sends the same requests with a plain go-openai loop
// (bare, the floor). It reports ns/step (wall time), B/step (bytes
// allocated) and cpu-ns/step (the process's CPU time: client, server and
// GC, which other processes' load does not inflate). Compare reprompt/bare
// within one run:
//
//	go test ./providers/openai -run '^$' -bench BenchmarkWire -count 5
func BenchmarkWire(b *testing.B) {
	for _, steps := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("steps=%d", steps), func(b *testing.B) {
			s := newS1Server(b, steps)
			bare := newBare(b, s)
			m := func() *openai.Model {
				return openai.New(openai.Config{BaseURL: s.srv.URL + "/v1", Model: "gpt-4.1", MaxRetries: -1})
			}
			bench := func(b *testing.B, run func()) {
				run() // warm the connection and process-wide caches
				b.ReportAllocs()
				var ms0, ms1 goruntime.MemStats
				goruntime.ReadMemStats(&ms0)
				cpu0, cpuOK := cpuTime()
				b.ResetTimer()
				for b.Loop() {
					run()
				}
				b.StopTimer()
				cpu1, _ := cpuTime()
				goruntime.ReadMemStats(&ms1)
				n := float64(b.N * steps)
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/step")
				b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/n, "B/step")
				if cpuOK {
					// Client, server and GC: robust to other processes'
					// load, unlike ns/step.
					b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/n, "cpu-ns/step")
				}
			}
			b.Run("reprompt", func(b *testing.B) {
				bench(b, func() { runReprompt(b, s, m()) })
			})
			b.Run("bare", func(b *testing.B) {
				bench(b, func() { bare.run(b, s) })
			})
		})
	}
}
