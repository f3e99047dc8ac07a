package crashtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/internal/pgtest"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
)

// workModel calls "work" once a step for 6 steps, then answers.
type workModel struct{}

func (workModel) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	k := 0
	for _, m := range req.Messages {
		if m.Role == defs.RoleAssistant {
			k++
		}
	}
	if k >= 6 {
		return &llm.Reply{Message: defs.AssistantMessage("done")}, nil
	}
	return &llm.Reply{Message: defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{
		{ID: fmt.Sprintf("w%d", k), Name: "work", Arguments: json.RawMessage(`{}`)},
	}}}, nil
}

// seqStore tells the Seq of each Save it lets through, and can hold a
// worker after the Save that reaches a Seq.
type seqStore struct {
	session.Store
	mu      sync.Mutex
	last    int64
	holdAt  int64         // after the Save that sets this Seq…
	reached chan struct{} // …closes reached…
	resume  chan struct{} // …and waits for resume
}

func (s *seqStore) Save(ctx context.Context, cp *session.Checkpoint) error {
	err := s.Store.Save(ctx, cp)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.last = cp.Seq
	hold := s.holdAt != 0 && cp.Seq == s.holdAt
	s.mu.Unlock()
	if hold {
		close(s.reached)
		<-s.resume
	}
	return nil
}

func (s *seqStore) lastSeq() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// TestStaleWorkerAfterRecreate reproduces, on every store, a worker that
// outlives its session: worker A is in a tool call; the session is
// deleted; run B creates it again under the same id and reaches A's Seq;
// then A's tool returns. A's save must be refused (a *session.ConflictError
// that says the session was created again), and B, the owner of the
// session now, must finish with its own transcript.
func TestStaleWorkerAfterRecreate(t *testing.T) {
	for _, b := range workerBackends() {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			open := b.open(t)
			id := pgtest.Name("recreate_")
			stA := &seqStore{Store: open(t)}
			t.Cleanup(func() { stA.Delete(context.Background(), id) })
			inTool, release := make(chan struct{}), make(chan struct{})
			fn := func(block bool) prompt.Func {
				return func(p *prompt.Prompt) error {
					p.DefSystem("role", "You work.")
					prompt.DefTool(p, "work", "work", func(ctx context.Context, _ struct{}) (string, error) {
						if block && prompt.CallID(ctx) == "w2" {
							close(inTool)
							<-release
						}
						return "worked", nil
					})
					p.User("Work.")
					return nil
				}
			}
			var errA error
			doneA := make(chan struct{})
			go func() {
				defer close(doneA)
				_, errA = runtime.New(workModel{}, fn(true), runtime.Config{Store: stA, SessionID: id, MaxSteps: 10}).Run(ctx)
			}()
			select {
			case <-inTool:
			case <-time.After(time.Minute):
				require.FailNow(t, "worker A did not reach its tool call")
			}
			seqA := stA.lastSeq()
			require.Positive(t, seqA, "worker A saved before its tool call")
			require.NoError(t, stA.Delete(ctx, id), "Delete")

			stB := &seqStore{Store: open(t), holdAt: seqA, reached: make(chan struct{}), resume: make(chan struct{})}
			var (
				resB *runtime.Result
				errB error
			)
			doneB := make(chan struct{})
			go func() {
				defer close(doneB)
				resB, errB = runtime.New(workModel{}, fn(false), runtime.Config{Store: stB, SessionID: id, MaxSteps: 10}).Run(ctx)
			}()
			select {
			case <-stB.reached:
			case <-doneB:
				require.FailNow(t, fmt.Sprintf("run B ended before it reached seq %d: %v", seqA, errB))
			case <-time.After(time.Minute):
				require.FailNow(t, fmt.Sprintf("run B did not reach seq %d", seqA))
			}
			close(release) // A's tool returns; A saves its result
			select {
			case <-doneA:
			case <-time.After(time.Minute):
				require.FailNow(t, "worker A did not end")
			}
			close(stB.resume)
			<-doneB

			ce, ok := errors.AsType[*session.ConflictError](errA)
			require.True(t, ok, "worker A's error %v is not a *session.ConflictError", errA)
			assert.True(t, ce.Recreated, "worker A's ConflictError says the session was created again: %v", ce)
			require.NoError(t, errB, "run B, the session's owner")
			latest, err := stB.Latest(ctx, id)
			require.NoError(t, err)
			assert.True(t, latest.Done, "B's session is done")
			want, err := json.Marshal(resB.Transcript)
			require.NoError(t, err)
			got, err := json.Marshal(latest.Transcript)
			require.NoError(t, err)
			assert.JSONEq(t, string(want), string(got), "the stored session is B's")
		})
	}
}
