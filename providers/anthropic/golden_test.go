package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/internal/cachetest"
	"github.com/reprompt/reprompt/providers/anthropic"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// block is one element of the sequence Anthropic's prompt cache reads, in
// its order (tools, then system, then the messages' content blocks): its
// place, its JSON without cache_control, and whether it carried a
// breakpoint.
type block struct {
	where string // "tools[1]", "system[0]", "messages[2].content[0] tool_result"
	json  string
	mark  bool
}

// promptBlocks returns the cache sequence of a request body decoded as
// generic JSON. A block's JSON leaves out cache_control, which is not part
// of what the cache compares, and a message's first block carries its role,
// which is.
func promptBlocks(t *testing.T, raw map[string]any) []block {
	t.Helper()
	var out []block
	add := func(where string, v any, prefix string) {
		m, _ := v.(map[string]any)
		_, mark := m["cache_control"]
		c := make(map[string]any, len(m))
		for k, x := range m {
			if k != "cache_control" {
				c[k] = x
			}
		}
		b, err := json.Marshal(c)
		require.NoError(t, err)
		out = append(out, block{where: where, json: prefix + string(b), mark: mark})
	}
	tools, _ := raw["tools"].([]any)
	for i, tl := range tools {
		add(fmt.Sprintf("tools[%d]", i), tl, "")
	}
	switch sys := raw["system"].(type) {
	case string:
		out = append(out, block{where: "system", json: sys})
	case []any:
		for i, b := range sys {
			add(fmt.Sprintf("system[%d]", i), b, "")
		}
	}
	msgs, _ := raw["messages"].([]any)
	for i, m := range msgs {
		mm, _ := m.(map[string]any)
		role, _ := mm["role"].(string)
		switch content := mm["content"].(type) {
		case string:
			out = append(out, block{where: fmt.Sprintf("messages[%d] %s text", i, role), json: role + ":" + content})
		case []any:
			for j, b := range content {
				typ, _ := b.(map[string]any)["type"].(string)
				prefix := ""
				if j == 0 {
					prefix = role + ":"
				}
				add(fmt.Sprintf("messages[%d].content[%d] %s %s", i, j, role, typ), b, prefix)
			}
		}
	}
	return out
}

// marks returns the indexes of blocks that carry a breakpoint.
func marks(bs []block) []int {
	var out []int
	for i, b := range bs {
		if b.mark {
			out = append(out, i)
		}
	}
	return out
}

// sameUpTo reports whether a and b have the same first n blocks.
func sameUpTo(a, b []block, n int) bool {
	if len(a) < n || len(b) < n {
		return false
	}
	for i := range n {
		if a[i].json != b[i].json {
			return false
		}
	}
	return true
}

// cacheLines describes, for request cur after prev, each breakpoint cur
// carries and whether each of prev's breakpoints is read by cur: the bytes
// up to it are the same in both requests, so the cache entry prev wrote
// there is a hit.
func cacheLines(prev, cur []block) []string {
	var lines []string
	var where []string
	for _, i := range marks(cur) {
		where = append(where, cur[i].where)
	}
	lines = append(lines, "breakpoints: "+strings.Join(where, "; "))
	if prev == nil {
		return lines
	}
	for _, i := range marks(prev) {
		state := "miss"
		if sameUpTo(prev, cur, i+1) {
			state = "read"
		}
		lines = append(lines, fmt.Sprintf("previous breakpoint %s: %s", prev[i].where, state))
	}
	return lines
}

// TestGoldenBreakpoints runs internal/cachetest's short coding agent
// through the adapter against the local server and compares, step by
// step, the breakpoints the adapter placed, which of the previous
// request's breakpoints this request reads (the same bytes up to them),
// and the step record's line on why the prefix broke (Step.Cache), with
// testdata/TestGoldenBreakpoints.golden: at cachetest.Withdrawn the prompt
// function withdraws a tool (the tools, first in the cache's order,
// change: nothing is read), the next step restores it, and at
// cachetest.Rewritten an effect commits a rewrite of the first tool
// result.
func TestGoldenBreakpoints(t *testing.T) {
	srv := newServer(t)
	srv.answerFor = func(n int, r received) answer {
		if n >= len(cachetest.Script) {
			return apiError(500, "api_error", "no more replies")
		}
		c := cachetest.Script[n]
		if c.Tool == "" {
			return answer{status: 200, body: textReply(c.Text)}
		}
		return answer{status: 200, body: toolUse(c.ID, c.Tool, c.Args)}
	}
	m := srv.model(anthropic.Config{MaxTokens: 1024}, nil)
	res, err := runtime.Run(context.Background(), m, cachetest.Agent, runtime.Config{SessionID: "golden", MaxSteps: 10})
	require.NoError(t, err)
	require.Len(t, res.Steps, len(cachetest.Script))
	require.Equal(t, len(cachetest.Script), srv.attempts())

	var b strings.Builder
	var prev []block
	for i, st := range res.Steps {
		cur := promptBlocks(t, srv.request(i).raw)
		fmt.Fprintf(&b, "-- step %d --\n", st.Number)
		cache := st.Cache
		if cache == "" {
			cache = "(prefix kept)"
		}
		fmt.Fprintf(&b, "cache: %s\n", cache)
		for _, l := range cacheLines(prev, cur) {
			fmt.Fprintf(&b, "%s\n", l)
		}
		fmt.Fprintf(&b, "tokens: %d counted, %d as in the previous request\n", st.InputTokens, st.PrefixTokens)
		prev = cur
	}
	snapshots.Golden(t, "testdata/TestGoldenBreakpoints.golden", []byte(b.String()))

	// What the golden file shows, checked: a breakpoint of the previous
	// request that this one does not read has a reason in Step.Cache, and
	// a step with no reason reads at least one.
	for i := 1; i < len(res.Steps); i++ {
		p, c := promptBlocks(t, srv.request(i-1).raw), promptBlocks(t, srv.request(i).raw)
		for _, k := range marks(p) {
			if !sameUpTo(p, c, k+1) {
				require.NotEmpty(t, res.Steps[i].Cache, "step %d misses %s with no reason given", i, p[k].where)
			}
		}
		if res.Steps[i].Cache == "" {
			require.True(t, slices.ContainsFunc(marks(p), func(k int) bool { return sameUpTo(p, c, k+1) }), "step %d reads nothing", i)
		}
	}
}

// toolUse is a Messages API reply calling one tool.
func toolUse(id, name, input string) string {
	return fmt.Sprintf(`{"id":"msg_%s","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":%q,"name":%q,"input":%s}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":100,"output_tokens":20,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}`, id, id, name, input)
}

// textReply is a Messages API reply with text only.
func textReply(text string) string {
	return fmt.Sprintf(`{"id":"msg_end","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":%q}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":100,"output_tokens":5,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}`, text)
}
