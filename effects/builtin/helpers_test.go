package builtin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/internal/stepmods"
	"github.com/reprompt/reprompt/runtime"
)

// newStep returns a step over msgs with a known window, counted at four
// characters a token.
func newStep(n int, msgs []defs.Message, window int) *effects.Step {
	s := effects.NewStep(n, msgs)
	s.Budget = effects.Budget{Window: window, Count: count}
	return s
}

func count(msgs []defs.Message) int {
	n := 0
	for _, m := range msgs {
		n += stepmods.EstimateTokens(m)
	}
	return n
}

// committed runs fn on s and returns the committed transcript, or nil when
// nothing was committed.
func committed(t testing.TB, fn effects.Func, s *effects.Step) []defs.Message {
	t.Helper()
	require.NoError(t, fn(context.Background(), s), "effect")
	mods := s.Mods()
	if !mods.Committed {
		return nil
	}
	require.NoError(t, runtime.ValidateMessages(mods.Transcript), "committed transcript is invalid:\n%s", dump(mods.Transcript))
	return mods.Transcript
}

func dump(msgs []defs.Message) string {
	var b strings.Builder
	for i, m := range msgs {
		c := m.Content
		if len(c) > 60 {
			c = c[:60] + "…"
		}
		fmt.Fprintf(&b, "%3d %-9s id=%s calls=%d meta=%v %q\n", i, m.Role, m.ToolCallID, len(m.ToolCalls), m.Meta, c)
	}
	return b.String()
}

// fakeModel is a Completer that records its calls.
type fakeModel struct {
	mu      sync.Mutex
	calls   []fakeCall
	reply   func(n int, system, user string) (string, error)
	summary string
}

type fakeCall struct{ system, user string }

func (f *fakeModel) Complete(ctx context.Context, system, user string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fakeCall{system, user})
	if f.reply != nil {
		return f.reply(len(f.calls), system, user)
	}
	if f.summary != "" {
		return f.summary, nil
	}
	return fmt.Sprintf("Summary #%d of the conversation.", len(f.calls)), nil
}

func (f *fakeModel) Calls() []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeCall(nil), f.calls...)
}

var errModelDown = errors.New("model down")

func user(text string) defs.Message      { return defs.UserMessage(text) }
func assistant(text string) defs.Message { return defs.AssistantMessage(text) }

// call returns an assistant message calling tools; each call is name:id with
// arguments {"path": id}.
func call(text string, calls ...string) defs.Message {
	m := defs.AssistantMessage(text)
	for _, c := range calls {
		name, id, _ := strings.Cut(c, ":")
		args, _ := json.Marshal(map[string]string{"path": id + ".go"})
		m.ToolCalls = append(m.ToolCalls, defs.ToolCall{ID: id, Name: name, Arguments: args})
	}
	return m
}

func result(id, name, content string) defs.Message {
	return defs.ToolResult{CallID: id, Name: name, Content: content}.Message()
}

func errResult(id, name, content string) defs.Message {
	return defs.ToolResult{CallID: id, Name: name, Content: content, IsError: true}.Message()
}

// toolTurn returns an assistant message with one call and its result of n
// characters.
func toolTurn(id string, n int) []defs.Message {
	return []defs.Message{call("", "read_file:"+id), result(id, "read_file", strings.Repeat("x", n))}
}

// randomHistory returns a valid transcript: a task, then turns of user
// requests, assistant messages with zero to three (parallel) tool calls,
// their results (some errors, some long), and answers.
func randomHistory(r *rand.Rand, turns int) []defs.Message {
	msgs := []defs.Message{user("Task: " + strings.Repeat("t", r.IntN(200)))}
	id := 0
	tools := []string{"read_file", "write_file", "grep", "run"}
	for range turns {
		if r.IntN(3) == 0 {
			msgs = append(msgs, user("Next: "+strings.Repeat("u", r.IntN(300))))
		}
		for range r.IntN(4) {
			k := 1 + r.IntN(3)
			if r.IntN(3) > 0 {
				k = 1
			}
			a := defs.AssistantMessage(strings.Repeat("a", r.IntN(200)))
			var res []defs.Message
			for range k {
				id++
				cid := fmt.Sprintf("c%d", id)
				name := tools[r.IntN(len(tools))]
				args, _ := json.Marshal(map[string]string{"path": fmt.Sprintf("f%d.go", r.IntN(20))})
				a.ToolCalls = append(a.ToolCalls, defs.ToolCall{ID: cid, Name: name, Arguments: args})
				content := strings.Repeat("r", r.IntN(3000))
				if r.IntN(6) == 0 {
					res = append(res, errResult(cid, name, "error: "+content))
				} else {
					res = append(res, result(cid, name, content))
				}
			}
			msgs = append(msgs, a)
			msgs = append(msgs, res...)
		}
		msgs = append(msgs, assistant(strings.Repeat("d", r.IntN(400))))
	}
	return msgs
}

func summaries(msgs []defs.Message) (n, at int) {
	at = -1
	for i, m := range msgs {
		if m.Meta["summary"] != "" {
			n++
			at = i
		}
	}
	return n, at
}
