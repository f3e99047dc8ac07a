package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/snapshots"
)

// chatter is a chat prompt: a counter tool, an effect on the count, and a
// definition for the turn's question.
type chatter struct {
	effectRuns atomic.Int32 // runs of the effect on the count
	turns      []prompt.Turn
}

func (c *chatter) fn(p *prompt.Prompt) error {
	count, setCount := prompt.State(p, "count", 0)
	turn := p.Turn()
	c.turns = append(c.turns, turn)
	p.DefSystem("role", "You chat and count.")
	p.Def("question", turn.Message) // a turn-specific definition
	prompt.DefTool(p, "add", "Add one.", func(ctx context.Context, _ struct{}) (int, error) {
		setCount.Update(ctx, func(n int) int { return n + 1 })
		return count + 1, nil
	})
	p.Effect(effects.On(count), func(context.Context, *effects.Step) error {
		c.effectRuns.Add(1)
		return nil
	})
	return nil
}

// turnScript answers each of n turns with a call of add, then text.
func turnScript(n int) []snapshots.Reply {
	var replies []snapshots.Reply
	for i := range n {
		replies = append(replies, snapshots.CallTool("add", nil), snapshots.Text("answer "+strconv.Itoa(i)))
	}
	return replies
}

// A finished run goes on with the user's next message: the transcript,
// state, effect memory and definitions carry over, the prompt function
// sees the turn, and Run without a new message is ErrDone.
func TestContinueInProcess(t *testing.T) {
	ctx := context.Background()
	var c chatter
	m := snapshots.Script(turnScript(3)...)
	r := runtime.New(m, c.fn, runtime.Config{})
	for i, q := range []string{"hello", "again", "last"} {
		res, err := r.Continue(ctx, q)
		require.NoError(t, err, "turn %d", i)
		assert.Equal(t, "answer "+strconv.Itoa(i), res.Text)
		require.Len(t, res.Steps, 2, "the steps of this turn")
		assert.Equal(t, []defs.Message{defs.UserMessage(q)}, res.Steps[0].Sent, "the turn's message joined at its first step")
		assert.Empty(t, res.Steps[1].Sent)
		for _, s := range res.Steps {
			assert.Equal(t, i, s.Turn)
		}
		n, err := runtime.StateOf[int](res, "count")
		require.NoError(t, err)
		assert.Equal(t, i+1, n, "state carries over")
		last := m.Requests()[len(m.Requests())-1]
		assert.Contains(t, last.System, "<question>"+q+"</question>", "the turn's definition")
	}
	assert.Equal(t, int32(4), c.effectRuns.Load(), "the effect ran at its first step and after each add, never again at a turn's start")
	assert.Equal(t, []string{
		"user: hello", "assistant:  {call_1 add {}}", "tool[call_1 add]: 1", "assistant: answer 0",
		"user: again", "assistant:  {call_2 add {}}", "tool[call_2 add]: 2", "assistant: answer 1",
		"user: last", "assistant:  {call_3 add {}}", "tool[call_3 add]: 3", "assistant: answer 2",
	}, transcriptOf(r.Transcript()))
	assert.Equal(t, prompt.Turn{Number: 2, Message: "last"}, c.turns[len(c.turns)-1])

	res, err := r.Run(ctx)
	require.ErrorIs(t, err, runtime.ErrDone, "Run on a finished runner without a new message")
	require.NotNil(t, res)
	assert.Empty(t, res.Steps)
	assert.Equal(t, "answer 2", res.Text, "the result still says how the run ended")
	_, err = r.Next(ctx)
	require.ErrorIs(t, err, runtime.ErrDone)
}

// A conversation on a store: each turn is saved before its model request,
// so a process that dies inside a turn resumes inside it, and a process
// that starts between turns continues from the store alone.
func TestContinueDurable(t *testing.T) {
	ctx := context.Background()
	st := session.NewMemory()
	cfg := runtime.Config{Store: st, SessionID: "chat"}
	var c chatter

	r := runtime.New(snapshots.Script(turnScript(1)...), c.fn, cfg)
	_, err := r.Continue(ctx, "hello")
	require.NoError(t, err)

	// A new process, the second turn: the model fails at its first request.
	down := errors.New("model down")
	r, err = runtime.Resume(ctx, snapshots.Script(snapshots.Fail(down)), c.fn, cfg)
	require.NoError(t, err)
	n, msg := r.Turn()
	assert.Equal(t, 0, n)
	assert.Equal(t, "hello", msg)
	_, err = r.Continue(ctx, "again")
	require.ErrorIs(t, err, down)
	cp, err := st.Latest(ctx, "chat")
	require.NoError(t, err)
	assert.False(t, cp.Done, "the new turn was saved before the model was called")
	assert.Equal(t, defs.UserMessage("again"), cp.Transcript[len(cp.Transcript)-1])

	// Another process resumes inside the turn: no new message is needed.
	m := snapshots.Script(turnScript(1)...)
	r, err = runtime.Resume(ctx, m, c.fn, cfg)
	require.NoError(t, err)
	n, msg = r.Turn()
	assert.Equal(t, 1, n)
	assert.Equal(t, "again", msg)
	res, err := r.Run(ctx)
	require.NoError(t, err)
	assert.Equal(t, "answer 0", res.Text)
	count, err := runtime.StateOf[int](res, "count")
	require.NoError(t, err)
	assert.Equal(t, 2, count)
	assert.Equal(t, []string{
		"user: hello", "assistant:  {call_1 add {}}", "tool[call_1 add]: 1", "assistant: answer 0",
		// A new script numbers its calls from 1 again; the runtime keeps
		// the ids of a transcript unique.
		"user: again", "assistant:  {call_1_2 add {}}", "tool[call_1_2 add]: 2", "assistant: answer 0",
	}, transcriptOf(res.Transcript))
	assert.Contains(t, m.Requests()[0].System, "<question>again</question>", "the turn restored for the prompt function")

	// Between turns, from the store alone.
	r, err = runtime.Resume(ctx, snapshots.Script(snapshots.Text("third")), c.fn, cfg)
	require.NoError(t, err)
	res, err = r.Continue(ctx, "third?")
	require.NoError(t, err)
	assert.Equal(t, "third", res.Text)
	require.Len(t, res.Steps, 1)
	assert.Equal(t, 2, res.Steps[0].Turn)
}

// Two processes continue one session at once: one wins; the other fails
// with a conflict before its model is asked anything, and saves nothing.
func TestContinueConflict(t *testing.T) {
	ctx := context.Background()
	st := session.NewMemory()
	cfg := runtime.Config{Store: st, SessionID: "chat"}
	var c chatter
	_, err := runtime.New(snapshots.Script(turnScript(1)...), c.fn, cfg).Continue(ctx, "hello")
	require.NoError(t, err)

	m1, m2 := snapshots.Script(snapshots.Text("one")), snapshots.Script(snapshots.Text("two"))
	r1, err := runtime.Resume(ctx, m1, c.fn, cfg)
	require.NoError(t, err)
	r2, err := runtime.Resume(ctx, m2, c.fn, cfg)
	require.NoError(t, err)
	_, err = r1.Continue(ctx, "from one")
	require.NoError(t, err)
	_, err = r2.Continue(ctx, "from two")
	var ce *session.ConflictError
	require.ErrorAs(t, err, &ce)
	var se *runtime.StepError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, runtime.OpCheckpoint, se.Op)
	assert.Empty(t, m2.Requests(), "the loser asked its model")
	cp, err := st.Latest(ctx, "chat")
	require.NoError(t, err)
	assert.Equal(t, "one", cp.Transcript[len(cp.Transcript)-1].Content)
}

// A message sent while a step runs joins the transcript at the next step,
// in the order sent, and that step's record lists it.
func TestSendSteersARunningRun(t *testing.T) {
	ctx := context.Background()
	var r *runtime.Runner
	fn := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "work", "Work.", func(ctx context.Context, _ struct{}) (string, error) {
			done := make(chan struct{})
			go func() { // another goroutine, while the step runs
				r.Send("also do B")
				r.Send("and C")
				close(done)
			}()
			<-done
			return "worked", nil
		})
		p.User("Do A.")
		return nil
	}
	r = runtime.New(snapshots.Script(snapshots.CallTool("work", nil), snapshots.Text("did A, B and C")), fn, runtime.Config{})
	res, err := r.Run(ctx)
	require.NoError(t, err)
	require.Len(t, res.Steps, 2)
	assert.Empty(t, res.Steps[0].Sent)
	assert.Equal(t, []defs.Message{defs.UserMessage("also do B"), defs.UserMessage("and C")}, res.Steps[1].Sent)
	assert.Equal(t, []string{
		"user: Do A.", "assistant:  {call_1 work {}}", "tool[call_1 work]: worked",
		"user: also do B", "user: and C", "assistant: did A, B and C",
	}, transcriptOf(res.Transcript))
	assert.Equal(t, 0, res.Steps[1].Turn, "steering is not a new turn")
}

type verdict struct {
	OK bool `json:"ok"`
}

// The typed answer of a finished session is there after Resume: Run
// returns ErrDone with a result that Output reads.
func TestOutputAfterResumeOfAFinishedSession(t *testing.T) {
	ctx := context.Background()
	st := session.NewMemory()
	cfg := runtime.Config{Store: st, SessionID: "typed"}
	fn := func(p *prompt.Prompt) error {
		prompt.DefOutput[verdict](p, "verdict", "The verdict.")
		p.User("Judge.")
		return nil
	}
	_, err := runtime.Run(ctx, snapshots.Script(snapshots.Answer(verdict{OK: true})), fn, cfg)
	require.NoError(t, err)
	r, err := runtime.Resume(ctx, snapshots.Script(), fn, cfg)
	require.NoError(t, err)
	res, err := r.Run(ctx)
	require.ErrorIs(t, err, runtime.ErrDone)
	v, err := runtime.Output[verdict](res)
	require.NoError(t, err)
	assert.True(t, v.OK)
}

// A long conversation keeps its cost per step flat: BenchmarkConversation
// sizes it; this test runs 50 turns and checks the transcript.
func TestManyTurns(t *testing.T) {
	ctx := context.Background()
	var replies []snapshots.Reply
	for i := range 50 {
		replies = append(replies, snapshots.Text(fmt.Sprint("a", i)))
	}
	r := runtime.New(snapshots.Script(replies...), func(p *prompt.Prompt) error {
		p.DefSystem("role", "Echo.")
		return nil
	}, runtime.Config{Store: session.NewMemory(), SessionID: "long"})
	for i := range 50 {
		res, err := r.Continue(ctx, fmt.Sprint("q", i))
		require.NoError(t, err)
		require.Equal(t, fmt.Sprint("a", i), res.Text)
	}
	tr := transcriptOf(r.Transcript())
	require.Len(t, tr, 100)
	assert.True(t, strings.HasPrefix(tr[98], "user: q49"))
}

// Config.MaxSteps limits each turn: a turn that reaches it ends with
// ErrMaxSteps, and the conversation goes on with the next message.
func TestMaxStepsEndsTheTurnNotTheConversation(t *testing.T) {
	ctx := context.Background()
	var c chatter
	m := snapshots.Script(
		snapshots.CallTool("add", nil), snapshots.CallTool("add", nil), // turn 0: two steps, still calling tools
		snapshots.CallTool("add", nil), snapshots.Text("ok"), // turn 1: two steps, done
	)
	r := runtime.New(m, c.fn, runtime.Config{MaxSteps: 2})
	res, err := r.Continue(ctx, "count a lot")
	require.ErrorIs(t, err, runtime.ErrMaxSteps)
	require.Len(t, res.Steps, 2)
	res, err = r.Continue(ctx, "now stop")
	require.NoError(t, err, "the limit counts the steps of a turn")
	assert.Equal(t, "ok", res.Text)
	n, err := runtime.StateOf[int](res, "count")
	require.NoError(t, err)
	assert.Equal(t, 3, n)
}

// MaxSteps bounds each turn of a conversation, not the conversation: a
// chat whose turns each call a tool goes on past MaxSteps steps in all,
// in process and after Resume inside a turn, and a turn that calls tools
// MaxSteps times still ends with ErrMaxSteps.
func TestMaxStepsPerTurn(t *testing.T) {
	ctx := context.Background()
	st := session.NewMemory()
	cfg := runtime.Config{Store: st, SessionID: "steps", MaxSteps: 3}
	var c chatter
	r := runtime.New(snapshots.Script(turnScript(3)...), c.fn, cfg)
	for i, q := range []string{"one", "two", "three"} { // 6 steps in all
		res, err := r.Continue(ctx, q)
		require.NoError(t, err, "turn %d: 2 steps, under MaxSteps 3", i)
		assert.Equal(t, "answer "+strconv.Itoa(i), res.Text)
	}

	// A process dies inside the fourth turn after its first step (a
	// failing model); another resumes it: the turn's steps count from its
	// start, not from the resumed step.
	down := errors.New("model down")
	r, err := runtime.Resume(ctx, snapshots.Script(snapshots.CallTool("add", nil), snapshots.Fail(down)), c.fn, cfg)
	require.NoError(t, err)
	_, err = r.Continue(ctx, "four")
	require.ErrorIs(t, err, down)
	r, err = runtime.Resume(ctx, snapshots.Script(snapshots.CallTool("add", nil), snapshots.CallTool("add", nil)), c.fn, cfg)
	require.NoError(t, err)
	res, err := r.Run(ctx)
	require.ErrorIs(t, err, runtime.ErrMaxSteps, "the fourth turn's third step called a tool")
	assert.Len(t, res.Steps, 2, "steps 2 and 3 of the fourth turn")
	count, err := runtime.StateOf[int](res, "count")
	require.NoError(t, err)
	assert.Equal(t, 6, count)
}

// blocking answers "first" once released, after telling that it was asked.
type blocking struct {
	asked, release chan struct{}
}

func (b blocking) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	close(b.asked)
	<-b.release
	return &llm.Reply{Message: defs.AssistantMessage("first")}, nil
}

// Two processes start one conversation at once: the one that comes second
// fails before asking its model, although the first has not finished its
// first step: the first turn is saved before its model request too.
func TestContinueNewSessionRace(t *testing.T) {
	ctx := context.Background()
	st := session.NewMemory()
	cfg := runtime.Config{Store: st, SessionID: "new"}
	fn := func(p *prompt.Prompt) error { return nil }
	b := blocking{asked: make(chan struct{}), release: make(chan struct{})}
	r1 := runtime.New(b, fn, cfg)
	errs := make(chan error, 1)
	go func() {
		_, err := r1.Continue(ctx, "hello from one")
		errs <- err
	}()
	<-b.asked // the first runner waits for its model's reply

	m2 := snapshots.Script(snapshots.Text("second"))
	_, err := runtime.New(m2, fn, cfg).Continue(ctx, "hello from two")
	close(b.release)
	var exists *runtime.SessionExistsError
	assert.ErrorAs(t, err, &exists, "the second runner of a new session")
	assert.Empty(t, m2.Requests(), "the second runner asked its model")
	require.NoError(t, <-errs, "the first runner")
	cp, err := st.Latest(ctx, "new")
	require.NoError(t, err)
	assert.Equal(t, []string{"user: hello from one", "assistant: first"}, transcriptOf(cp.Transcript))
}

// The checkpoint saved at the start of a turn is the one Store.AtStep
// returns for its first step: it keeps the record of the step before it
// (the last step of the previous turn), in the same process and after a
// restart between turns.
func TestTurnStartKeepsTheRecord(t *testing.T) {
	ctx := context.Background()
	st := session.NewMemory()
	cfg := runtime.Config{Store: st, SessionID: "rec"}
	var c chatter
	r := runtime.New(snapshots.Script(turnScript(3)...), c.fn, cfg)
	for _, msg := range []string{"one", "two"} {
		_, err := r.Continue(ctx, msg)
		require.NoError(t, err)
	}
	r, err := runtime.Resume(ctx, snapshots.Script(turnScript(3)[4:]...), c.fn, cfg)
	require.NoError(t, err)
	_, err = r.Continue(ctx, "three")
	require.NoError(t, err)
	for _, step := range []int{2, 4} { // the first steps of turns 1 and 2
		cp, err := st.AtStep(ctx, "rec", step)
		require.NoError(t, err, "AtStep(%d)", step)
		require.NotNil(t, cp.Record, "AtStep(%d): the record of step %d", step, step-1)
		assert.Equal(t, step-1, cp.Record.Step, "AtStep(%d): Record.Step", step)
		assert.Equal(t, step/2-1, cp.Record.Turn, "AtStep(%d): Record.Turn", step)
		assert.Equal(t, "stop", cp.Record.Finish, "AtStep(%d): the record of the turn's answer", step)
	}
}

// TestResumedStepKeepsFinishAndSent: a turn's first step cut short after
// the model's reply (its tool call cancels the run) and resumed by a new
// process shows the reply's finish reason and the turn's message in its
// record, as the step would have if it had not been cut.
func TestResumedStepKeepsFinishAndSent(t *testing.T) {
	ctx := context.Background()
	st := session.NewMemory()
	cfg := runtime.Config{Store: st, SessionID: "cut"}
	cctx, cancel := context.WithCancel(ctx)
	fn := func(p *prompt.Prompt) error {
		prompt.DefTool(p, "slow", "Waits.", func(ctx context.Context, _ struct{}) (string, error) {
			cancel()
			<-ctx.Done()
			return "", ctx.Err()
		})
		return nil
	}
	r := runtime.New(snapshots.Script(snapshots.CallTool("slow", struct{}{})), fn, cfg)
	_, err := r.Continue(cctx, "hello")
	require.ErrorIs(t, err, context.Canceled)

	r, err = runtime.Resume(ctx, snapshots.Script(snapshots.Text("done")), fn, cfg)
	require.NoError(t, err)
	res, err := r.Run(ctx)
	require.NoError(t, err)
	first := res.Steps[0]
	require.True(t, first.Resumed, "the first step is the resumed one")
	assert.Equal(t, llm.FinishToolCalls, first.Reply.FinishReason, "the resumed step's finish reason")
	assert.Equal(t, []defs.Message{defs.UserMessage("hello")}, first.Sent, "the resumed step's sent messages")
	assert.Nil(t, res.Steps[1].Sent, "the next step's sent messages")
}
