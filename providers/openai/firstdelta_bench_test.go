package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/providers/openai"
	"github.com/reprompt/reprompt/runtime"
)

// BenchmarkFirstDelta measures how long the first fragment of a streamed
// reply takes to reach the caller: through runtime.Run (scenario S1's
// first step, Config.OnDelta) and the adapter, and through a bare go-openai
// stream sending the same request (the floor), alternated in each
// iteration so both see the same machine. The server flushes the first
// chunk as soon as it has read the request; the rest of the reply follows.
//
// Reported, as medians over the iterations:
//
//   - after-flush-ns: from the server's flush of the first chunk to the
//     delta reaching OnDelta (reprompt) or Recv returning (bare);
//
//   - from-call-ns: from calling runtime.Run (reprompt) or
//     CreateChatCompletionStream (bare) to that moment;
//
//   - added-*-ns: reprompt minus bare, what the runtime and the adapter add
//     (the target is at most 50 µs);
//
//   - adapter-added-*-ns: Model.Stream alone (the same request, no runtime)
//     minus bare, the adapter's share.
//
//     go test ./providers/openai -run '^$' -bench BenchmarkFirstDelta -count 5
func BenchmarkFirstDelta(b *testing.B) {
	base := time.Now()
	var flushed atomic.Int64 // time.Since(base) when the first chunk was flushed
	chunk := func(delta, finish string) string {
		return `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}` + "\n\n"
	}
	first := chunk(`{"role":"assistant","content":"Done"}`, "null")
	rest := chunk(`{"content":" counting."}`, "null") + chunk(`{}`, `"stop"`) + "data: [DONE]\n\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, first)
		flushed.Store(int64(time.Since(base)))
		w.(http.Flusher).Flush()
		io.WriteString(w, rest)
	}))
	defer srv.Close()

	// The bare client sends the request S1's first step sends.
	s1 := newS1Server(b, 1)
	bare := newBare(b, s1)
	cfg := sdk.DefaultConfig("")
	cfg.BaseURL = srv.URL + "/v1"
	cfg.HTTPClient = &http.Client{}
	client := sdk.NewClientWithConfig(cfg)
	bareReq := sdk.ChatCompletionRequest{
		Model: "gpt-4.1",
		Messages: []sdk.ChatCompletionMessage{
			{Role: sdk.ChatMessageRoleSystem, Content: bare.system},
			{Role: sdk.ChatMessageRoleUser, Content: "Count as far as you can."},
		},
		Tools:         bare.tools,
		StreamOptions: &sdk.StreamOptions{IncludeUsage: true},
	}
	m := openai.New(openai.Config{BaseURL: srv.URL + "/v1", Model: "gpt-4.1", MaxRetries: -1})

	reprompt := func() (afterFlush, fromCall time.Duration) {
		var at time.Duration
		start := time.Since(base)
		_, err := runtime.Run(context.Background(), m, scenarioS1, runtime.Config{MaxSteps: 1, OnDelta: func(d llm.Delta) {
			if at == 0 {
				at = time.Since(base)
			}
		}})
		require.NoError(b, err)
		return at - time.Duration(flushed.Load()), at - start
	}
	// The adapter alone: Model.Stream with the request S1's first step
	// sends, without the runtime.
	adapterReq := &llm.Request{
		System:   bare.system,
		Messages: []defs.Message{defs.UserMessage("Count as far as you can.")},
	}
	for _, t := range bare.tools {
		adapterReq.Tools = append(adapterReq.Tools, llm.ToolSpec{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters.(json.RawMessage)})
	}
	adapter := func() (afterFlush, fromCall time.Duration) {
		var at time.Duration
		start := time.Since(base)
		_, err := m.Stream(context.Background(), adapterReq, func(d llm.Delta) {
			if at == 0 {
				at = time.Since(base)
			}
		})
		require.NoError(b, err)
		return at - time.Duration(flushed.Load()), at - start
	}
	floor := func() (afterFlush, fromCall time.Duration) {
		start := time.Since(base)
		stream, err := client.CreateChatCompletionStream(context.Background(), bareReq)
		require.NoError(b, err)
		defer stream.Close()
		_, err = stream.Recv()
		require.NoError(b, err)
		at := time.Since(base)
		for {
			_, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(b, err)
		}
		return at - time.Duration(flushed.Load()), at - start
	}

	reprompt() // warm the connections and process-wide caches
	adapter()
	floor()
	var rf, rc, af, ac, bf, bc []time.Duration
	for b.Loop() {
		f, c := reprompt()
		rf, rc = append(rf, f), append(rc, c)
		f, c = adapter()
		af, ac = append(af, f), append(ac, c)
		f, c = floor()
		bf, bc = append(bf, f), append(bc, c)
	}
	median := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Nanoseconds())
	}
	b.ReportMetric(median(rf), "reprompt-after-flush-ns")
	b.ReportMetric(median(bf), "bare-after-flush-ns")
	b.ReportMetric(median(rf)-median(bf), "added-after-flush-ns")
	b.ReportMetric(median(rc), "reprompt-from-call-ns")
	b.ReportMetric(median(bc), "bare-from-call-ns")
	b.ReportMetric(median(rc)-median(bc), "added-from-call-ns")
	b.ReportMetric(median(af)-median(bf), "adapter-added-after-flush-ns")
	b.ReportMetric(median(ac)-median(bc), "adapter-added-from-call-ns")
}
