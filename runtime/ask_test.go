package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/snapshots"
)

type booking struct {
	runs atomic.Int32 // runs of the book tool
}

type bookArgs struct {
	Day string `json:"day"`
}

type seating struct {
	Seats int  `json:"seats"`
	Patio bool `json:"patio"`
}

// fn is a prompt whose tool asks two questions: a number, then a struct.
// It changes state before it asks: those changes are dropped when it asks.
func (b *booking) fn(p *prompt.Prompt) error {
	_, setTries := prompt.State(p, "tries", 0)
	booked, setBooked := prompt.State(p, "booked", "")
	p.Def("booked", booked)
	prompt.DefTool(p, "book", "Book a table.", func(ctx context.Context, a bookArgs) (string, error) {
		b.runs.Add(1)
		setTries.Update(ctx, func(n int) int { return n + 1 })
		n, err := prompt.Ask[int](ctx, "How many people?")
		if err != nil {
			return "", err
		}
		s, err := prompt.Ask[seating](ctx, fmt.Sprintf("Seating for %d?", n))
		if err != nil {
			return "", err
		}
		setBooked.Set(ctx, fmt.Sprintf("%s for %d (%d seats, patio %t)", a.Day, n, s.Seats, s.Patio))
		return "booked", nil
	})
	p.User("Book Friday.")
	return nil
}

func bookingScript() *snapshots.Model {
	return snapshots.Script(snapshots.CallTool("book", bookArgs{Day: "Friday"}), snapshots.Text("Done."))
}

// A tool asks the user: the run pauses with the question and the JSON
// Schema of its answer; a wrong answer is refused; each answer runs the
// call again, which gets the answers in order; the transcript holds one
// result, and the state only the changes of the run that completed.
func TestAskInProcess(t *testing.T) {
	ctx := context.Background()
	var b booking
	r := runtime.New(bookingScript(), b.fn, runtime.Config{})
	res, err := r.Run(ctx)
	require.NoError(t, err)
	require.Len(t, res.Awaiting, 1)
	q := res.Awaiting[0]
	assert.Equal(t, "How many people?", q.Question)
	assert.JSONEq(t, `{"type":"integer"}`, string(q.Schema))
	assert.Equal(t, "book", q.Tool)

	var ae *runtime.ApprovalError
	require.ErrorAs(t, r.Answer(q.CallID, "two"), &ae, "an answer of another type")
	assert.ErrorIs(t, r.Approve(q.CallID), runtime.ErrAwaitingAnswer)
	_, err = r.Next(ctx)
	require.ErrorIs(t, err, runtime.ErrAwaitingApproval, "still waiting: the wrong answer was not recorded")

	require.NoError(t, r.Answer(q.CallID, 2))
	res, err = r.Run(ctx)
	require.NoError(t, err)
	require.Len(t, res.Awaiting, 1, "the second question")
	assert.Equal(t, "Seating for 2?", res.Awaiting[0].Question)
	require.NoError(t, r.Answer(q.CallID, json.RawMessage(`{"seats":2,"patio":true}`)))
	res, err = r.Run(ctx)
	require.NoError(t, err)
	assert.Empty(t, res.Awaiting)
	assert.Equal(t, "Done.", res.Text)
	assert.Equal(t, int32(3), b.runs.Load(), "run once per question, and once to finish")
	booked, err := runtime.StateOf[string](res, "booked")
	require.NoError(t, err)
	assert.Equal(t, "Friday for 2 (2 seats, patio true)", booked)
	tries, err := runtime.StateOf[int](res, "tries")
	require.NoError(t, err)
	assert.Equal(t, 1, tries, "the changes of the runs that asked were dropped")
	assert.Equal(t, []string{"user: Book Friday.", `assistant:  {call_1 book {"day":"Friday"}}`, "tool[call_1 book]: booked", "assistant: Done."},
		transcriptOf(res.Transcript))
	last := res.Steps[len(res.Steps)-2]
	require.Len(t, last.Decisions, 1)
	assert.True(t, last.Decisions[0].Approved, "an answered call ran")
}

// A question is durable: a process that resumes the paused session sees
// it, answers it, and the run completes, the answers kept across resumes.
func TestAskAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	st := session.NewMemory()
	cfg := runtime.Config{Store: st, SessionID: "book"}
	var b booking
	res, err := runtime.New(bookingScript(), b.fn, cfg).Run(ctx)
	require.NoError(t, err)
	require.Len(t, res.Awaiting, 1)

	r, err := runtime.Resume(ctx, snapshots.Script(), b.fn, cfg)
	require.NoError(t, err)
	aw := r.Awaiting()
	require.Len(t, aw, 1)
	assert.Equal(t, "How many people?", aw[0].Question)
	require.NoError(t, r.Answer(aw[0].CallID, 4))

	r, err = runtime.Resume(ctx, snapshots.Script(), b.fn, cfg) // the answer was saved
	require.NoError(t, err)
	res, err = r.Run(ctx)
	require.NoError(t, err)
	require.Len(t, res.Awaiting, 1)
	assert.Equal(t, "Seating for 4?", res.Awaiting[0].Question)
	require.NoError(t, r.Answer(res.Awaiting[0].CallID, seating{Seats: 4}))

	r, err = runtime.Resume(ctx, snapshots.Script(snapshots.Text("Booked.")), b.fn, cfg)
	require.NoError(t, err)
	res, err = r.Run(ctx)
	require.NoError(t, err)
	assert.Equal(t, "Booked.", res.Text)
	booked, err := runtime.StateOf[string](res, "booked")
	require.NoError(t, err)
	assert.Equal(t, "Friday for 4 (4 seats, patio false)", booked)
}

// Declining a question denies the call: the model gets the reason as its
// result. Answer on a call that asked nothing is refused.
func TestAskDeclinedAndMisused(t *testing.T) {
	ctx := context.Background()
	var b booking
	r := runtime.New(bookingScript(), b.fn, runtime.Config{})
	res, err := r.Run(ctx)
	require.NoError(t, err)
	require.Len(t, res.Awaiting, 1)
	id := res.Awaiting[0].CallID
	assert.ErrorIs(t, r.Answer("nope", 1), runtime.ErrUnknownCall)
	require.NoError(t, r.Deny(id, "no booking today"))
	res, err = r.Run(ctx)
	require.NoError(t, err)
	assert.Contains(t, transcriptOf(res.Transcript), "tool[call_1 book]!: no booking today")

	needs := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "pay", "Pay.", func(context.Context, struct{}) (string, error) { return "paid", nil }, prompt.NeedsApproval())
		p.User("Pay.")
		return nil
	}
	r = runtime.New(snapshots.Script(snapshots.CallTool("pay", nil), snapshots.Text("ok")), needs, runtime.Config{})
	res, err = r.Run(ctx)
	require.NoError(t, err)
	require.Len(t, res.Awaiting, 1)
	assert.Empty(t, res.Awaiting[0].Question, "an approval asks nothing")
	assert.ErrorIs(t, r.Answer(res.Awaiting[0].CallID, true), runtime.ErrNoQuestion)

	_, err = prompt.Ask[int](ctx, "outside a call?")
	assert.ErrorIs(t, err, prompt.ErrNoToolCall)
}

// A sub-agent's tool that asks is answered through its parent's run: the
// parent's call pauses with the sub-agent's question, and once answered
// the sub-agent runs again from its start and gets the answer.
func TestAskFromASubAgent(t *testing.T) {
	ctx := context.Background()
	var picks atomic.Int32
	painter := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "pick", "Pick a color.", func(ctx context.Context, _ struct{}) (string, error) {
			c, err := prompt.Ask[string](ctx, "Which color?")
			if err != nil {
				return "", err
			}
			picks.Add(1)
			return c, nil
		})
		return nil
	}
	parent := func(p *prompt.Prompt) error {
		p.DefAgent("painter", "Paints.", painter)
		p.User("Paint the door.")
		return nil
	}
	m := snapshots.Script(snapshots.CallTool("painter", prompt.AgentArgs{Task: "the door"}), snapshots.Text("Painted.")).
		Agent("painter", snapshots.CallTool("pick", nil), // the first run, which asks
			snapshots.CallTool("pick", nil), snapshots.Text("blue it is")) // the run again, answered
	r := runtime.New(m, parent, runtime.Config{})
	res, err := r.Run(ctx)
	require.NoError(t, err)
	require.Len(t, res.Awaiting, 1, "the parent's call waits for the sub-agent's question")
	assert.Equal(t, "painter", res.Awaiting[0].Tool)
	assert.Equal(t, "Which color?", res.Awaiting[0].Question)
	require.NoError(t, r.Answer(res.Awaiting[0].CallID, "blue"))
	res, err = r.Run(ctx)
	require.NoError(t, err)
	assert.Equal(t, "Painted.", res.Text)
	assert.Contains(t, transcriptOf(res.Transcript), "tool[call_1 painter]: blue it is")
	assert.Equal(t, int32(1), picks.Load())
}
