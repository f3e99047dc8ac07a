package snapshots_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/snapshots"
)

// A conversation's golden file shows its turns: each turn's first step
// with the user's message (its "sent" section), then the steps of the turn.
func TestConversationGolden(t *testing.T) {
	chat := func(p *prompt.Prompt) error {
		notes, setNotes := prompt.State(p, "notes", []string{})
		p.DefSystem("role", "You are a note keeper.")
		p.DefData("notes", notes)
		p.Def("question", p.Turn().Message)
		prompt.DefTool(p, "remember", "Remember a note.", func(ctx context.Context, a struct {
			Note string `json:"note"`
		}) (string, error) {
			setNotes.Update(ctx, func(ns []string) []string { return append(append([]string(nil), ns...), a.Note) })
			return "noted", nil
		})
		return nil
	}
	model := snapshots.Script(
		snapshots.Text("Hello! What should I remember?"),
		snapshots.CallTool("remember", map[string]string{"note": "buy milk"}),
		snapshots.Text("Noted: buy milk."),
		snapshots.Text("You asked me to remember: buy milk."),
	)
	res := snapshots.Run(t, chat, model, snapshots.Turns("Hi.", "Remember to buy milk.", "What do I remember?"))
	require.NotNil(t, res)
	require.Len(t, res.Steps, 4)
	assert.Equal(t, []int{0, 1, 1, 2}, []int{res.Steps[0].Turn, res.Steps[1].Turn, res.Steps[2].Turn, res.Steps[3].Turn})
	notes, err := runtime.StateOf[[]string](res, "notes")
	require.NoError(t, err)
	assert.Equal(t, []string{"buy milk"}, notes)
	assertFormatStep(t, res.Steps)
}

// A process that continues a conversation takes up the script where the
// one before stopped: Skip passes over the replies given before, and the
// call ids go on from there.
func TestSkipAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	st := session.NewMemory()
	cfg := runtime.Config{Store: st, SessionID: "c"}
	script := []snapshots.Reply{snapshots.CallTool("note", nil), snapshots.Text("one"), snapshots.CallTool("note", nil), snapshots.Text("two")}
	fn := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "note", "Note.", func(context.Context, struct{}) (string, error) { return "noted", nil })
		return nil
	}
	r := runtime.New(snapshots.Script(script...), fn, cfg)
	_, err := r.Continue(ctx, "first")
	require.NoError(t, err)

	r, err = runtime.Resume(ctx, nil, fn, cfg) // another process: the model is set below
	require.NoError(t, err)
	m := snapshots.Script(script...).Skip(r.StepNumber())
	r, err = runtime.Resume(ctx, m, fn, cfg)
	require.NoError(t, err)
	res, err := r.Continue(ctx, "second")
	require.NoError(t, err)
	assert.Equal(t, "two", res.Text)
	assert.Zero(t, m.Remaining())
	assert.Equal(t, "call_2", res.Steps[0].Reply.Message.ToolCalls[0].ID, "ids go on from the skipped replies'")
}
