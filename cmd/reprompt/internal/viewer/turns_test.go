package viewer_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/cmd/reprompt/internal/showtext"
	"github.com/reprompt/reprompt/cmd/reprompt/internal/viewer"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/snapshots"
)

type chatArgs struct {
	Item string `json:"item"`
}

// shop is a conversation: its tool "add" steers the run once (a message
// sent while it runs), and its tool "order" asks the user how many.
type shop struct {
	r     *runtime.Runner
	steer string
}

func (s *shop) fn(p *prompt.Prompt) error {
	items, setItems := prompt.State(p, "items", []string{})
	p.DefSystem("role", "You keep a shopping list.")
	p.Def("items", strings.Join(items, ", "))
	prompt.DefTool(p, "add", "Add an item.", func(ctx context.Context, a chatArgs) (string, error) {
		setItems.Set(ctx, append(items, a.Item))
		if s.steer != "" {
			s.r.Send(s.steer)
			s.steer = ""
		}
		return "added", nil
	})
	prompt.DefTool(p, "order", "Order an item.", func(ctx context.Context, a chatArgs) (string, error) {
		n, err := prompt.Ask[int](ctx, "How many "+a.Item+"?")
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("ordered %d %s", n, a.Item), nil
	})
	return nil
}

func shopScript() *snapshots.Model {
	return snapshots.Script(
		snapshots.Text("Hi! What do you need?"),
		snapshots.CallTool("add", chatArgs{Item: "milk"}),
		snapshots.Text("Added milk; eggs too."),
		snapshots.CallTool("order", chatArgs{Item: "eggs"}),
		snapshots.Text("Ordered."),
	)
}

// TestTurns: a conversation read from a store has its turns, each with its
// message and steps, the messages sent while it ran, and the question a
// tool asked, awaiting its answer and then answered.
func TestTurns(t *testing.T) {
	ctx := t.Context()
	st := session.NewMemory()
	s := &shop{steer: "Eggs too."}
	s.r = runtime.New(shopScript(), s.fn, runtime.Config{Store: st, SessionID: "shop"})
	for _, msg := range []string{"Hello.", "Add milk.", "Order eggs."} {
		_, err := s.r.Continue(ctx, msg)
		require.NoError(t, err, "Continue(%q)", msg)
	}
	run, err := viewer.FromStore(ctx, st, "shop")
	require.NoError(t, err)
	require.True(t, run.Conversation())
	type turn struct {
		Number  int
		Message string
		Steps   []int
	}
	turnsOf := func(run *viewer.Run) []turn {
		var out []turn
		for _, tr := range run.Turns() {
			t := turn{Number: tr.Number, Message: tr.Message}
			for _, s := range tr.Steps {
				t.Steps = append(t.Steps, s.Number)
			}
			out = append(out, t)
		}
		return out
	}
	want := []turn{{0, "Hello.", []int{0}}, {1, "Add milk.", []int{1, 2}}, {2, "Order eggs.", []int{3}}}
	assert.Empty(t, cmp.Diff(want, turnsOf(run)), "turns (-want +got)")
	require.Len(t, run.Steps, 4)
	assert.Equal(t, []string{"Eggs too."}, run.Steps[2].Steering(), "step 2: the message sent while step 1 ran")
	assert.Empty(t, run.Steps[1].Steering())
	assert.Empty(t, cmp.Diff([]viewer.Ask{{CallID: "call_2", Tool: "order", Question: "How many eggs?", Decision: "awaiting"}}, run.Steps[3].Asks),
		"the paused step's question (-want +got)")

	var text bytes.Buffer
	require.NoError(t, showtext.Write(&text, run, showtext.Options{}))
	assert.Contains(t, text.String(), "user: Order eggs.\nassistant asks (call call_2 order): How many eggs?\n(awaiting the answer)\n    step 3 · called order {\"item\":\"eggs\"} · ")

	require.NoError(t, s.r.Answer("call_2", 12))
	_, err = s.r.Run(ctx)
	require.NoError(t, err)
	run, err = viewer.FromStore(ctx, st, "shop")
	require.NoError(t, err)
	want[2].Steps = []int{3, 3, 4} // step 3 paused, step 3 answered (as a golden file shows it), step 4
	assert.Empty(t, cmp.Diff(want, turnsOf(run)), "turns once answered (-want +got)")
	text.Reset()
	require.NoError(t, showtext.Write(&text, run, showtext.Options{}))
	assert.Contains(t, text.String(), "user: Order eggs.\nassistant asks (call call_2 order): How many eggs?\n(awaiting the answer)\n"+
		"assistant asks (call call_2 order): How many eggs?\nuser answers: 12\nassistant: Ordered.\n"+
		"    step 3 · called order {\"item\":\"eggs\"} · ")
	assert.Contains(t, text.String(), "    step 3 (decided) · called order {\"item\":\"eggs\"}")
}
