package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects/builtin"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/providers/anthropic"
	"github.com/reprompt/reprompt/runtime"
)

// relay is a model that sends every request through the adapter to the
// fake server, which answers with what inner, a simulated model, replies
// to the same request: a run through relay is inner's run, with every
// request on the wire as the adapter makes it.
type relay struct {
	t       *testing.T
	srv     *fakeServer
	adapter *anthropic.Model
	inner   llm.Model

	mu   sync.Mutex
	next string    // the body the server answers the next request with
	sent []relayed // what each request the server saw was for, in order
}

// relayed says what a request was for, and the runtime's hints on it.
type relayed struct {
	purpose             llm.Purpose
	step                int
	committed, repeated int
	messages            []defs.Message
}

func newRelay(t *testing.T, inner llm.Model, cfg anthropic.Config) *relay {
	r := &relay{t: t, inner: inner}
	r.srv = newServer(t)
	r.srv.answerFor = func(n int, _ received) answer {
		return answer{status: 200, body: r.next}
	}
	r.adapter = r.srv.model(cfg, nil)
	return r
}

func (r *relay) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	want, err := r.inner.Generate(ctx, req)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next = replyBody(r.t, want)
	r.sent = append(r.sent, relayed{purpose: req.Purpose, step: req.Step, committed: req.Committed, repeated: req.Repeated, messages: req.Messages})
	got, err := r.adapter.Generate(ctx, req)
	if err != nil {
		return nil, err
	}
	// The adapter must give back what the simulated model said.
	require.Equal(r.t, want.Message.Content, got.Message.Content, "request %d: reply text through the adapter", len(r.sent)-1)
	require.Equal(r.t, len(want.Message.ToolCalls), len(got.Message.ToolCalls), "request %d: tool calls through the adapter", len(r.sent)-1)
	for i, c := range want.Message.ToolCalls {
		g := got.Message.ToolCalls[i]
		require.Equal(r.t, c.ID, g.ID)
		require.Equal(r.t, c.Name, g.Name)
		require.JSONEq(r.t, string(c.Arguments), string(g.Arguments))
	}
	return got, nil
}

// replyBody is the Messages API response carrying rep.
func replyBody(t *testing.T, rep *llm.Reply) string {
	var content []map[string]any
	if rep.Message.Content != "" {
		content = append(content, map[string]any{"type": "text", "text": rep.Message.Content})
	}
	for _, c := range rep.Message.ToolCalls {
		content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": json.RawMessage(c.Arguments)})
	}
	stop := "end_turn"
	if len(rep.Message.ToolCalls) > 0 {
		stop = "tool_use"
	}
	b, err := json.Marshal(map[string]any{
		"id": "msg_relay", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": max(rep.Usage.InputTokens, 1), "output_tokens": max(rep.Usage.OutputTokens, 1)},
	})
	require.NoError(t, err)
	return string(b)
}

// stepRequests returns the blocks of the step requests the server saw, by
// step number (the summaries effects asked for are left out).
func (r *relay) stepRequests(t *testing.T) map[int][]block {
	out := map[int][]block{}
	for i, s := range r.sent {
		if s.purpose == llm.PurposeStep {
			out[s.step] = promptBlocks(t, r.srv.request(i).raw)
		}
	}
	return out
}

// checkBreakpoints checks, across every step of a run through the relay,
// the invariant prompt caching needs: the bytes up to each breakpoint of
// the previous step's request are the same in this step's request (so
// the cache entry written there is read), except at the steps whose record
// says why the prefix broke (Step.Cache: a commit, a definition or the
// tool list changed). It returns the number of steps that read all their
// previous request's breakpoints, the number of the others that still
// read one in the messages, and the causes of those others.
func checkBreakpoints(t *testing.T, reqs map[int][]block, steps []*runtime.Step) (readAll, readInto int, causes map[string]int) {
	t.Helper()
	causes = map[string]int{}
	for i := 1; i < len(steps); i++ {
		prev, cur := reqs[steps[i-1].Number], reqs[steps[i].Number]
		require.NotNil(t, prev, "step %d: no request on the wire", steps[i-1].Number)
		require.NotNil(t, cur, "step %d: no request on the wire", steps[i].Number)
		pm := marks(prev)
		require.NotEmpty(t, pm, "step %d: no breakpoint", steps[i-1].Number)
		require.LessOrEqual(t, len(pm), 4, "step %d: more than 4 breakpoints", steps[i-1].Number)
		missed, furthest := "", -1
		for _, k := range pm {
			if !sameUpTo(prev, cur, k+1) {
				if missed == "" {
					missed = prev[k].where
				}
				continue
			}
			furthest = k
		}
		if missed == "" {
			readAll++
			continue
		}
		if furthest >= 0 && strings.HasPrefix(prev[furthest].where, "messages") {
			readInto++
		}
		why := steps[i].Cache
		require.NotEmpty(t, why, "step %d does not read the previous request's breakpoint at %s, and its record gives no reason", steps[i].Number, missed)
		kind, _, _ := strings.Cut(why, ":")
		if strings.HasPrefix(why, "transcript rewritten by commit") {
			kind = "transcript rewritten by commit"
		}
		causes[kind]++
	}
	return readAll, readInto, causes
}

// TestRelayKeepsTheSimulatedRun: a run through the relay is the simulated
// model's run, and what reaches the wire meets the breakpoint invariant on
// a short agent.
func TestRelayKeepsTheSimulatedRun(t *testing.T) {
	inner := &reader{n: 12}
	rl := newRelay(t, inner, anthropic.Config{MaxTokens: 1024})
	res, err := runtime.Run(context.Background(), rl, readerAgent, runtime.Config{MaxSteps: 20})
	require.NoError(t, err)
	require.Len(t, res.Steps, 13)
	assert.Equal(t, "read 12 files", res.Text)
	readAll, _, causes := checkBreakpoints(t, rl.stepRequests(t), res.Steps)
	assert.Equal(t, 12, readAll, "steps that read the previous request's breakpoints")
	assert.Empty(t, causes)
}

// reader is a simulated model that reads n files, one a step, then says so.
type reader struct{ n int }

func (m *reader) Generate(_ context.Context, req *llm.Request) (*llm.Reply, error) {
	if req.Purpose == llm.PurposeSummary {
		return &llm.Reply{Message: defs.Message{Role: defs.RoleAssistant, Content: "Files were read."}}, nil
	}
	if req.Step >= m.n {
		return &llm.Reply{Message: defs.Message{Role: defs.RoleAssistant, Content: fmt.Sprintf("read %d files", m.n)}, FinishReason: llm.FinishStop}, nil
	}
	args := fmt.Sprintf(`{"path":"file%d.go"}`, req.Step)
	return &llm.Reply{Message: defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: fmt.Sprintf("toolu_%d", req.Step), Name: "read_file", Arguments: json.RawMessage(args)}}}, FinishReason: llm.FinishToolCalls}, nil
}

// readerAgent declares what reader calls.
func readerAgent(p *prompt.Prompt) error {
	p.DefSystem("role", "You read files.")
	prompt.DefTool(p, "read_file", "Read a file.", func(ctx context.Context, a struct {
		Path string `json:"path"`
	}) (string, error) {
		return "package main // " + a.Path + strings.Repeat(" x", 1500), nil
	})
	p.User("Read the files.")
	return nil
}

// TestBreakpointsUnderDefaults runs reader for 80 steps under
// builtin.Defaults in a window small enough for trimming and compaction,
// through the relay, and checks the breakpoint invariant at every step.
func TestBreakpointsUnderDefaults(t *testing.T) {
	inner := &reader{n: 80}
	rl := newRelay(t, inner, anthropic.Config{MaxTokens: 1024})
	defaults := builtin.Defaults(builtin.Profile{Window: 8000, OutputReserve: 1000, CachedInputFraction: 0.1, CacheWriteFraction: 1.25})
	agent := func(p *prompt.Prompt) error {
		defaults.Register(p)
		return readerAgent(p)
	}
	res, err := runtime.Run(context.Background(), rl, agent, runtime.Config{MaxSteps: 100, Window: 8000, Reserve: 1000})
	require.NoError(t, err)
	require.Len(t, res.Steps, 81)
	readAll, readInto, causes := checkBreakpoints(t, rl.stepRequests(t), res.Steps)
	t.Logf("steps that read all the previous request's breakpoints: %d of %d; of the others, %d read one in the messages; their causes: %v", readAll, len(res.Steps)-1, readInto, causes)
}
