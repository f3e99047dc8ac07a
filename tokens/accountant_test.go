package tokens

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/reprompt/reprompt/defs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// spy counts the calls a Counter gets.
type spy struct {
	Counter
	messages, tools atomic.Int64
}

func (s *spy) Message(m defs.Message) int {
	s.messages.Add(1)
	return s.Counter.Message(m)
}

func (s *spy) Tool(name, description string, parameters json.RawMessage) int {
	s.tools.Add(1)
	return s.Counter.Tool(name, description, parameters)
}

func scratch(c Counter, msgs []defs.Message) int {
	n := 0
	for _, m := range msgs {
		n += c.Message(m)
	}
	return n
}

var words = strings.Fields("the runtime counts tokens of every message and tool schema once per change so that a step costs only what is new 42 λ 世界 🙂 {\"path\":\"a.go\"}")

func randomMessage(r *rand.Rand) defs.Message {
	var b strings.Builder
	for range 1 + r.IntN(12) {
		b.WriteString(words[r.IntN(len(words))])
		b.WriteByte(' ')
	}
	switch r.IntN(4) {
	case 0:
		return defs.UserMessage(b.String())
	case 1:
		return defs.AssistantMessage(b.String())
	case 2:
		id := fmt.Sprintf("call_%d", r.IntN(1000))
		return defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: id, Name: "read", Arguments: json.RawMessage(`{"q":"` + words[r.IntN(len(words))] + `"}`)}}}
	default:
		return defs.Message{Role: defs.RoleTool, Content: b.String(), ToolCallID: fmt.Sprintf("call_%d", r.IntN(1000)), Name: "read"}
	}
}

// TestAccountantMatchesScratch drives an Accountant with the slices a run
// produces (appends, requests with view tails written into the transcript's
// spare capacity or into a copy, compactions, repeats, empty slices) and
// checks every count and prefix against counting from scratch.
func TestAccountantMatchesScratch(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 7))
			var c Counter = Estimator{}
			if seed%2 == 0 {
				c = O200k()
			}
			a := NewAccountant(c)
			var transcript []defs.Message
			check := func(op string, msgs []defs.Message) {
				t.Helper()
				if testing.Verbose() && cap(msgs) > 0 { // -json implies -v: CI runs this
					t.Logf("%s len=%d cap=%d first=%p", op, len(msgs), cap(msgs), &msgs[:1][0])
				}
				require.Empty(t, cmp.Diff(scratch(c, msgs), a.Count(msgs)), "%s: Count(%d messages) mismatch (-want +got)", op, len(msgs))
				k := r.IntN(len(msgs) + 2)
				require.Empty(t, cmp.Diff(scratch(c, msgs[:min(k, len(msgs))]), a.Prefix(k)), "%s: Prefix(%d) mismatch (-want +got)", op, k)
			}
			for step := range 300 {
				switch op := r.IntN(10); {
				case op < 4: // the transcript grows
					for range 1 + r.IntN(3) {
						transcript = append(transcript, randomMessage(r))
					}
					check("append", transcript)
				case op < 6: // a request: transcript + tail in spare capacity
					req := append(transcript, randomMessage(r))
					check("tail in place", req)
				case op < 7: // a request: clipped transcript + tail (a copy)
					req := append(slices.Clip(transcript), randomMessage(r))
					check("tail copy", req)
				case op < 8: // compaction: summary + recent messages, new array
					keep := min(len(transcript), r.IntN(6))
					next := []defs.Message{defs.UserMessage(fmt.Sprint("summary ", step))}
					transcript = append(next, transcript[len(transcript)-keep:]...)
					check("compact", transcript)
				case op < 9: // the transcript again, unchanged
					check("repeat", transcript)
				default: // a shorter view over the same array
					check("head", transcript[:r.IntN(len(transcript)+1)])
				}
			}
		})
	}
}

// TestAccountantOverwrittenTail is the case the same-array check exists
// for: a view tail written into the transcript's spare capacity is later
// overwritten by the transcript's own growth.
func TestAccountantOverwrittenTail(t *testing.T) {
	c := O200k()
	a := NewAccountant(c)
	transcript := make([]defs.Message, 0, 16)
	transcript = append(transcript, defs.UserMessage("hello"), defs.AssistantMessage("hi"))
	a.Count(transcript)
	req := append(transcript, defs.UserMessage("reminder: be brief and precise, always"))
	a.Count(req)
	transcript = append(transcript, defs.AssistantMessage("x")) // overwrites the reminder
	require.Same(t, &req[2], &transcript[2], "test setup: want the reply written over the reminder")
	assert.Empty(t, cmp.Diff(scratch(c, transcript), a.Count(transcript)), "Count after overwrite mismatch (-want +got)")
}

// TestAccountantCountsOnlyNew checks the work done, not just the result:
// appending to the transcript counts and hashes only the new messages, a
// tail view counts only its tail, and a compaction reuses the cached counts
// of the messages it keeps.
func TestAccountantCountsOnlyNew(t *testing.T) {
	s := &spy{Counter: Estimator{}}
	a := NewAccountant(s)
	r := rand.New(rand.NewPCG(1, 2))
	transcript := make([]defs.Message, 0, 64)
	for range 10 {
		transcript = append(transcript, randomMessage(r))
	}
	a.Count(transcript)

	type work struct{ Counted, Hashed int64 }
	measure := func(msgs []defs.Message) work {
		m, h := s.messages.Load(), a.hashed
		a.Count(msgs)
		return work{s.messages.Load() - m, int64(a.hashed - h)}
	}
	transcript = append(transcript, defs.AssistantMessage("new reply"), defs.UserMessage("new question"))
	assert.Empty(t, cmp.Diff(work{2, 2}, measure(transcript)), "append 2: work mismatch (-want +got)")
	assert.Empty(t, cmp.Diff(work{0, 0}, measure(transcript)), "repeat: work mismatch (-want +got)")
	req := append(slices.Clip(transcript), defs.UserMessage("a reminder"))
	assert.Empty(t, cmp.Diff(work{1, 1}, measure(req)), "tail copy: work mismatch (-want +got)")
	assert.Empty(t, cmp.Diff(work{0, 0}, measure(transcript)), "back to the transcript: work mismatch (-want +got)")
	req = append(slices.Clip(transcript), defs.UserMessage("a reminder"))
	assert.Empty(t, cmp.Diff(work{0, 0}, measure(req)), "same reminder again: work mismatch (-want +got)")
	compacted := append([]defs.Message{defs.UserMessage("summary")}, transcript[4:]...)
	compacted = slices.Clone(compacted)
	assert.Empty(t, cmp.Diff(work{1, int64(len(compacted))}, measure(compacted)), "compaction: work mismatch (-want +got)")
}

func TestAccountantCacheBounded(t *testing.T) {
	a := NewAccountant(Estimator{})
	for i := range 3 * CacheSize {
		a.Count([]defs.Message{defs.UserMessage(fmt.Sprint(i))})
	}
	n := len(a.cache[0]) + len(a.cache[1])
	assert.LessOrEqual(t, n, CacheSize, "cache holds %d entries, want at most %d", n, CacheSize)
}

func TestAccountantTools(t *testing.T) {
	s := &spy{Counter: O200k()}
	a := NewAccountant(s)
	tools := []Tool{
		{Name: "read", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object"}`)},
		{Name: "write", Description: "Write a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
	}
	want := ToolsOverhead
	for _, tl := range tools {
		want += O200k().Tool(tl.Name, tl.Description, tl.Parameters)
	}
	type result struct{ Count, Tokenized int64 }
	step := func(tools []Tool) result {
		before := s.tools.Load()
		n := a.Tools(tools)
		return result{int64(n), s.tools.Load() - before}
	}
	tests := []struct {
		name  string
		tools []Tool
		want  result
	}{
		{"first", tools, result{int64(want), 2}},
		{"unchanged", tools, result{int64(want), 0}},
		{"copy", slices.Clone(tools), result{int64(want), 0}},
		{"limited", tools[:1], result{int64(ToolsOverhead + O200k().Tool("read", "Read a file.", tools[0].Parameters)), 0}},
		{"none", nil, result{0, 0}},
		{"changed", []Tool{tools[0], {Name: "write", Description: "Write.", Parameters: tools[1].Parameters}},
			result{int64(want - O200k().Text("Write a file.") + O200k().Text("Write.")), 1}},
	}
	for _, tt := range tests {
		assert.Empty(t, cmp.Diff(tt.want, step(tt.tools)), "%s: Tools mismatch (-want +got)", tt.name)
	}
}

// TestConcurrent runs counters and a shared Accountant from many goroutines;
// run it with -race.
func TestConcurrent(t *testing.T) {
	a := NewAccountant(ForModel("gpt-4o"))
	h := NewHybrid(Estimator{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 3))
			var msgs []defs.Message
			for range 50 {
				msgs = append(msgs, randomMessage(r))
				want := scratch(O200k(), msgs)
				if !assert.Equal(t, want, a.Count(msgs), "goroutine %d: Count", g) {
					return
				}
				_ = a.Prefix(len(msgs) / 2)
				_ = a.Tools([]Tool{{Name: "t", Parameters: json.RawMessage(`{}`)}})
				_ = ForModel("gpt-4").Text(msgs[len(msgs)-1].Content)
				h.Observe(msgs, 10, 100, 5)
				_ = h.Estimate(msgs)
			}
		})
	}
	wg.Wait()
}
