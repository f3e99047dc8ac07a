package convtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
)

// SessionID is the session Run keeps the conversation in.
const SessionID = "conversation"

// Turns of the conversation at which Run does something other than resume
// and continue.
const (
	modelFailsTurn = 5 // the model fails at the turn's second step (ToolSteps(5) == 2)
	saveFailsTurn  = 6 // the save of a call's result fails: the step is resumed with its reply
	raceTurn       = 7 // two runners continue the session at once
)

// Run checks the conversation on st, which holds no session SessionID:
// each turn in a fresh runner resumed from st alone; a turn interrupted
// by its model at the second step, and one by a failed save while its
// tools ran, each resumed; a turn that two runners continue at once, of
// which one wins and the other gets a conflict before asking its model.
// The outcome must be that of an uninterrupted run on a memory store, and
// every charge made once.
func Run(t *testing.T, st session.Store) {
	ctx := context.Background()
	want := uninterrupted(t)
	l := NewLedger(t.TempDir())
	fn := Agent(l)
	cfg := runtime.Config{Store: st, SessionID: SessionID}
	resume := func(md llm.Model, cfg runtime.Config) *runtime.Runner {
		t.Helper()
		r, err := runtime.Resume(ctx, md, fn, cfg)
		require.NoError(t, err, "Resume")
		return r
	}

	res, err := runtime.New(Model{}, fn, cfg).Continue(ctx, Message(0))
	require.NoError(t, err, "turn 0")
	assert.Len(t, res.Steps, 1+ToolSteps(0), "turn 0: steps")
	for i := 1; i < Turns; i++ {
		switch i {
		case modelFailsTurn:
			down := errors.New("model down")
			_, err := resume(&failing{at: 2, err: down}, cfg).Continue(ctx, Message(i))
			require.ErrorIs(t, err, down, "turn %d: the model fails at the second step", i)
			cp, err := st.Latest(ctx, SessionID)
			require.NoError(t, err)
			assert.False(t, cp.Done, "turn %d after the failure: Done", i)
			assert.Equal(t, i+1, NextTurn(cp.Transcript), "turn %d after the failure: the turn's message is stored", i)
			finish(t, resume(Model{}, cfg), i, ToolSteps(i)) // the second step and the answer
		case saveFailsTurn:
			bcfg := cfg
			bcfg.Store = failingSave{st}
			_, err := resume(Model{}, bcfg).Continue(ctx, Message(i))
			require.ErrorIs(t, err, errSave, "turn %d: a result's save fails", i)
			cp, err := st.Latest(ctx, SessionID)
			require.NoError(t, err)
			require.NotNil(t, cp.Pending, "turn %d after the failed save: the step is stored with its reply", i)
			assert.Empty(t, cp.Pending.Results, "turn %d after the failed save: results stored", i)
			finish(t, resume(Model{}, cfg), i, 1+ToolSteps(i)) // the interrupted step, the answer
		case raceTurn:
			race(t, resume, cfg, i)
		default:
			res, err := resume(Model{}, cfg).Continue(ctx, Message(i))
			require.NoError(t, err, "turn %d", i)
			require.Len(t, res.Steps, 1+ToolSteps(i), "turn %d: steps", i)
			assert.Equal(t, i, res.Steps[0].Turn, "turn %d: Step.Turn", i)
			assert.Contains(t, res.Text, fmt.Sprintf("turn %d answered", i), "turn %d: the answer", i)
		}
	}

	got, err := OutcomeOf(ctx, st, SessionID)
	require.NoError(t, err)
	assert.Empty(t, cmp.Diff(want, got), "the conversation differs from an uninterrupted one on a memory store (-want +got)")
	charges, err := l.Charges()
	require.NoError(t, err)
	assert.Empty(t, cmp.Diff(Calls(), charges), "charges by call id (-want +got)")
	attempts, err := l.Attempts()
	require.NoError(t, err)
	assert.Equal(t, 2, attempts[fmt.Sprintf("t%d-s0-charge", saveFailsTurn)], "runs of the charge whose result was not saved")

	// A finished conversation, resumed: nothing to run, its last answer.
	r := resume(Model{}, cfg)
	res, err = r.Run(ctx)
	require.ErrorIs(t, err, runtime.ErrDone, "Run of the finished conversation, resumed")
	assert.Equal(t, want.Transcript[len(want.Transcript)-1].Content, res.Text, "Text of the finished conversation, resumed")
}

// uninterrupted runs the conversation in one runner on a memory store.
func uninterrupted(t *testing.T) Outcome {
	ctx := context.Background()
	st := session.NewMemory()
	r := runtime.New(Model{}, Agent(NewLedger(t.TempDir())), runtime.Config{Store: st, SessionID: SessionID})
	require.NoError(t, Converse(ctx, r), "uninterrupted conversation")
	want, err := OutcomeOf(ctx, st, SessionID)
	require.NoError(t, err)
	require.True(t, want.Done, "uninterrupted conversation: Done")
	require.Equal(t, Turns, NextTurn(want.Transcript), "uninterrupted conversation: turns")
	return want
}

// finish runs r, resumed inside turn, to the turn's end: left steps.
func finish(t *testing.T, r *runtime.Runner, turn, left int) {
	t.Helper()
	n, msg := r.Turn()
	assert.Equal(t, turn, n, "resumed inside turn %d: Turn", turn)
	assert.Equal(t, Message(turn), msg, "resumed inside turn %d: the turn's message", turn)
	res, err := r.Run(context.Background())
	require.NoError(t, err, "finishing turn %d", turn)
	require.Len(t, res.Steps, left, "finishing turn %d: steps", turn)
	assert.True(t, res.Steps[len(res.Steps)-1].Done, "finishing turn %d: Done", turn)
}

// race continues the session in two runners at once.
func race(t *testing.T, resume func(llm.Model, runtime.Config) *runtime.Runner, cfg runtime.Config, turn int) {
	ctx := context.Background()
	models := [2]*counting{{}, {}}
	runners := [2]*runtime.Runner{resume(models[0], cfg), resume(models[1], cfg)}
	var errs [2]error
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range runners {
		wg.Go(func() {
			<-start
			_, errs[i] = runners[i].Continue(ctx, Message(turn))
		})
	}
	close(start)
	wg.Wait()
	loser := 0
	if errs[0] == nil {
		loser = 1
	}
	require.NoError(t, errs[1-loser], "turn %d: the winner of two runners", turn)
	var ce *session.ConflictError
	require.ErrorAs(t, errs[loser], &ce, "turn %d: the loser of two runners", turn)
	var se *runtime.StepError
	require.ErrorAs(t, errs[loser], &se, "turn %d: the loser of two runners", turn)
	assert.Equal(t, runtime.OpCheckpoint, se.Op, "turn %d: the loser's StepError.Op", turn)
	assert.Zero(t, models[loser].n.Load(), "turn %d: requests of the loser's model", turn)
	assert.Equal(t, int32(1+ToolSteps(turn)), models[1-loser].n.Load(), "turn %d: requests of the winner's model", turn)
}

// counting is Model, counting its requests.
type counting struct {
	Model
	n atomic.Int32
}

func (m *counting) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	m.n.Add(1)
	return m.Model.Generate(ctx, req)
}

// failing is Model, failing with err at its at-th request.
type failing struct {
	Model
	at  int
	n   int
	err error
}

func (m *failing) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	m.n++
	if m.n == m.at {
		return nil, m.err
	}
	return m.Model.Generate(ctx, req)
}

var errSave = errors.New("convtest: save failed")

// failingSave fails the saves of a step under way that hold a result:
// the step's latest checkpoint holds its reply only.
type failingSave struct{ session.Store }

func (s failingSave) Save(ctx context.Context, cp *session.Checkpoint) error {
	if cp.Pending != nil && len(cp.Pending.Results) > 0 {
		return errSave
	}
	return s.Store.Save(ctx, cp)
}
