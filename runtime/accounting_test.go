package runtime_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// charCounter counts one token per byte, so expected figures are easy to
// compute from scratch.
type charCounter struct{}

func (charCounter) Exact() bool       { return true }
func (charCounter) Text(s string) int { return len(s) }
func (charCounter) Message(m defs.Message) int {
	n := len(m.Role) + len(m.Content) + len(m.ToolCallID)
	for _, c := range m.ToolCalls {
		n += len(c.ID) + len(c.Name) + len(c.Arguments)
	}
	return n
}
func (charCounter) Tool(name, description string, parameters json.RawMessage) int {
	return len(name) + len(description) + len(parameters)
}

func fromScratch(req *llm.Request) (fixed, total int) {
	var c charCounter
	fixed = c.Text(req.System)
	for _, t := range req.Tools {
		fixed += c.Tool(t.Name, t.Description, t.Parameters)
	}
	total = fixed
	for _, m := range req.Messages {
		total += c.Message(m)
	}
	return fixed, total
}

func TestStepTokenAccounting(t *testing.T) {
	remindAt, commitAt := 2, 4
	fn := func(p *prompt.Prompt) error {
		p.DefSystem("role", "You echo things, carefully and at length.")
		echo := prompt.DefTool(p, "echo", "repeat", func(ctx context.Context, a struct {
			Text string `json:"text"`
		}) (string, error) {
			return a.Text, nil
		})
		p.Effect(effects.Always, func(ctx context.Context, s *effects.Step) error {
			switch s.Number {
			case remindAt:
				echo.Remind() // a view at the tail
			case commitAt:
				msgs := append([]defs.Message(nil), s.Transcript()...)
				msgs[0].Content = "rewritten task" // a commit at the head
				s.CommitMessages(msgs)
			}
			return nil
		})
		p.User("echo five times")
		return nil
	}
	var replies []snapshots.Reply
	for range 6 {
		replies = append(replies, snapshots.CallTool("echo", map[string]string{"text": "hello there"}))
	}
	replies = append(replies, snapshots.Text("done"))
	res, err := runtime.Run(context.Background(), snapshots.Script(replies...), fn, runtime.Config{Counter: charCounter{}, CachedInputFraction: 0.25})
	require.NoError(t, err)
	for i, s := range res.Steps {
		fixed, total := fromScratch(s.Request())
		assert.Equal(t, total, s.InputTokens, "step %d: InputTokens against a count from scratch", i)
		var want int
		switch {
		case i == 0:
			want = 0
		case i == commitAt:
			want = fixed // the first message changed: only system prompt and tools are shared
		case i == remindAt+1:
			prev := res.Steps[i-1]
			_, prevTotal := fromScratch(prev.Request())
			reminder := charCounter{}.Message(prev.Request().Messages[len(prev.Request().Messages)-1])
			want = prevTotal - reminder // all but the previous step's reminder
		default:
			want = res.Steps[i-1].InputTokens // the previous request is a prefix
		}
		assert.Equal(t, want, s.PrefixTokens, "step %d: PrefixTokens", i)
		assert.Equal(t, float64(s.InputTokens-s.PrefixTokens)+0.25*float64(s.PrefixTokens), s.BilledInput, "step %d: BilledInput", i)
	}
}

// TestBudgetCountsWhatEffectsSee checks Step.Tokens against a count from
// scratch of the request the step then sends.
func TestBudgetCountsWhatEffectsSee(t *testing.T) {
	var seen []int
	fn := func(p *prompt.Prompt) error {
		p.DefSystem("role", "Count.")
		prompt.DefTool(p, "echo", "repeat", func(ctx context.Context, _ struct{}) (string, error) { return "echoed", nil })
		p.Effect(effects.Always, func(ctx context.Context, s *effects.Step) error {
			assert.Equal(t, 1000, s.Budget.Window, "Budget.Window")
			assert.Equal(t, 100, s.Budget.Reserve, "Budget.Reserve")
			seen = append(seen, s.Tokens())
			return nil
		})
		p.User("go")
		return nil
	}
	m := snapshots.Script(snapshots.CallTool("echo", nil), snapshots.CallTool("echo", nil), snapshots.Text("done"))
	res, err := runtime.Run(context.Background(), m, fn, runtime.Config{Counter: charCounter{}, Window: 1000, Reserve: 100})
	require.NoError(t, err)
	for i := range res.Steps {
		_, total := fromScratch(res.Steps[i].Request())
		assert.Equal(t, total, seen[i], "step %d: tokens the effect saw against the request's", i)
	}
}

// estimate is charCounter without the claim to be exact.
type estimate struct{ c charCounter }

func (e estimate) Text(s string) int          { return e.c.Text(s) }
func (e estimate) Message(m defs.Message) int { return e.c.Message(m) }
func (e estimate) Tool(n, d string, p json.RawMessage) int {
	return e.c.Tool(n, d, p)
}

func TestEstimatesAreCalibratedByReportedUsage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		factor float64 // the provider's count over ours
		want   float64 // the calibration applied
	}{
		{"1.5", 1.5, 1.5},
		{"clamped at 2", 3, 2},
		{"clamped at 0.5", 0.2, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reply := func(calls bool) snapshots.Reply {
				return snapshots.Reply{Func: func(req *llm.Request) snapshots.Reply {
					_, raw := fromScratch(req)
					r := snapshots.Reply{Text: "done", Usage: &llm.Usage{InputTokens: int(float64(raw) * tc.factor)}}
					if calls {
						r = snapshots.Reply{Calls: []snapshots.Call{{Name: "echo", Args: map[string]string{"text": "hi"}}}, Usage: r.Usage}
					}
					return r
				}}
			}
			m := snapshots.Script(reply(true), reply(true), reply(false))
			res, err := runtime.Run(context.Background(), m, echoPrompt, runtime.Config{Counter: estimate{}})
			require.NoError(t, err)
			_, raw := fromScratch(res.Steps[0].Request())
			assert.Equal(t, raw, res.Steps[0].InputTokens, "step 0 (nothing reported yet): InputTokens, want the raw count")
			for i := 1; i < len(res.Steps); i++ {
				_, raw := fromScratch(res.Steps[i].Request())
				want := float64(raw) * tc.want
				assert.InDelta(t, want, float64(res.Steps[i].InputTokens), 3, "step %d: InputTokens, want about %d × %v", i, raw, tc.want)
			}
		})
	}
}
