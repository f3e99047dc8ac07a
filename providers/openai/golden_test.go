package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/internal/cachetest"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// TestGoldenPromptCache runs internal/cachetest's short coding agent
// through the adapter, against a server that checks every body against
// the OpenAPI description, and compares, step by step, the prompt-cache
// fields the request carries, how many of its leading items (the tools,
// then the messages) are byte for byte the previous request's (what
// OpenAI's cache can match: the longest common prefix), and the step
// record's line on why the prefix broke (Step.Cache), with
// testdata/TestGoldenPromptCache.golden.
func TestGoldenPromptCache(t *testing.T) {
	var replies []reply
	for _, c := range cachetest.Script {
		replies = append(replies, reply{body: chatReply(c)})
	}
	f := newFakeServer(t, replies...)
	cfg := f.config("gpt-5", nil)
	cfg.Cache, cfg.PromptCacheRetention = CacheOn, "24h"
	res, err := runtime.Run(context.Background(), New(cfg), cachetest.Agent, runtime.Config{SessionID: "golden", MaxSteps: 10})
	require.NoError(t, err)
	require.Len(t, res.Steps, len(cachetest.Script))
	require.Equal(t, len(cachetest.Script), f.hits())

	var b strings.Builder
	var prev []string
	var prevBody map[string]any
	for i, st := range res.Steps {
		body := f.body(i)
		cur := cacheItems(t, body)
		fmt.Fprintf(&b, "-- step %d --\n", st.Number)
		cache := st.Cache
		if cache == "" {
			cache = "(prefix kept)"
		}
		fmt.Fprintf(&b, "cache: %s\n", cache)
		fmt.Fprintf(&b, "prompt_cache_key: %v, prompt_cache_retention: %v\n", body["prompt_cache_key"], body["prompt_cache_retention"])
		same := 0
		for same < len(prev) && same < len(cur) && prev[same] == cur[same] {
			same++
		}
		if prev != nil {
			fmt.Fprintf(&b, "as in the previous request: %d of its %d items (%s)\n", same, len(prev), itemName(prevBody, same))
		}
		fmt.Fprintf(&b, "tokens: %d counted, %d as in the previous request\n", st.InputTokens, st.PrefixTokens)
		// A request that does not extend the previous one has a reason.
		if prev != nil && same < len(prev) {
			require.NotEmpty(t, st.Cache, "step %d repeats %d of the previous request's %d items with no reason given", i, same, len(prev))
		}
		prev, prevBody = cur, body
	}
	snapshots.Golden(t, "testdata/TestGoldenPromptCache.golden", []byte(b.String()))
}

// cacheItems returns a request body's items in the order a prompt cache
// reads them: the tools, then the messages, each as its JSON.
func cacheItems(t *testing.T, body map[string]any) []string {
	t.Helper()
	var out []string
	for _, k := range []string{"tools", "messages"} {
		items, _ := body[k].([]any)
		for _, it := range items {
			j, err := json.Marshal(it)
			require.NoError(t, err)
			out = append(out, string(j))
		}
	}
	return out
}

// itemName says where, in the previous request's body, the first
// difference is: at its "tools[i]" or "messages[i]", or nowhere when the
// previous request is a prefix of this one.
func itemName(body map[string]any, i int) string {
	tools, _ := body["tools"].([]any)
	msgs, _ := body["messages"].([]any)
	switch {
	case i < len(tools):
		return fmt.Sprintf("then its tools[%d] differs", i)
	case i < len(tools)+len(msgs):
		return fmt.Sprintf("then its messages[%d] differs", i-len(tools))
	}
	return "this request extends it"
}

// chatReply is a chat completion answering with c.
func chatReply(c cachetest.Call) string {
	msg := fmt.Sprintf(`{"role":"assistant","content":%q,"refusal":null}`, c.Text)
	finish := "stop"
	if c.Tool != "" {
		msg = fmt.Sprintf(`{"role":"assistant","content":null,"refusal":null,"tool_calls":[{"id":%q,"type":"function","function":{"name":%q,"arguments":%q}}]}`, c.ID, c.Tool, c.Args)
		finish = "tool_calls"
	}
	return fmt.Sprintf(`{"id":"chatcmpl-golden","object":"chat.completion","created":1743500000,"model":"gpt-5","choices":[{"index":0,"message":%s,"logprobs":null,"finish_reason":%q}],"usage":{"prompt_tokens":100,"completion_tokens":10,"total_tokens":110,"prompt_tokens_details":{"cached_tokens":0}}}`, msg, finish)
}
