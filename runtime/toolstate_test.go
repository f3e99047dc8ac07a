package runtime_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/snapshots"
)

type itemArgs struct {
	Item string `json:"item"`
}

// shopping is an agent whose parallel tool calls each change state after a
// random delay, so that they finish in a random order. The tests run it in
// a synctest bubble, where the delays take no real time: calls whose
// delays differ finish in the order of their delays, and those whose
// delays are equal (whole milliseconds, so often) run at once.
func shopping(p *prompt.Prompt) error {
	list, setList := prompt.State(p, "list", []string{})
	last, setLast := prompt.State(p, "last", "")
	p.DefData("list", list)
	p.Def("last", last)
	prompt.DefTool(p, "add", "Add an item to the list.", func(ctx context.Context, a itemArgs) (bool, error) {
		time.Sleep(time.Duration(rand.N(3)) * time.Millisecond)
		setList.Update(ctx, func(l []string) []string { return append(slices.Clone(l), a.Item) })
		setLast.Set(ctx, a.Item)
		time.Sleep(time.Duration(rand.N(2)) * time.Millisecond)
		// A live read sees the call's own change (and those of the calls
		// before it that finished: which ones depends on timing).
		l, err := prompt.GetState[[]string](ctx, p, "list")
		return slices.Contains(l, a.Item), err
	})
	p.User("Buy cheese, milk and bread.")
	return nil
}

func shoppingScript() llm.Model {
	return snapshots.Script(
		snapshots.CallTools(
			snapshots.Call{Name: "add", Args: itemArgs{"cheese"}},
			snapshots.Call{Name: "add", Args: itemArgs{"milk"}},
			snapshots.Call{Name: "add", Args: itemArgs{"bread"}},
		),
		snapshots.Text("Done."),
	)
}

// The state a step records is the same whatever order the parallel calls
// finish in: their changes are applied in call order.
func TestParallelToolStateIsInCallOrder(t *testing.T) {
	runs := 1000
	if testing.Short() {
		runs = 100
	}
	synctest.Test(t, func(t *testing.T) {
		for range runs {
			res := snapshots.Run(t, shopping, shoppingScript())
			require.Equal(t, []string{"cheese", "milk", "bread"}, res.Steps[0].State["list"])
			require.Equal(t, "bread", res.Steps[0].State["last"])
			if t.Failed() {
				return
			}
		}
	})
}

// A checkpoint saved while some calls of a reply still run holds the
// results and state changes of the calls before the first unfinished one,
// and nothing of the others.
func TestCheckpointHoldsStateOfSavedResultsOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for range 50 {
			store := &recordingStore{Store: session.NewMemory()}
			_, err := runtime.Run(context.Background(), shoppingScript(), shopping, runtime.Config{Store: store, SessionID: "s"})
			require.NoError(t, err)
			for _, cp := range store.saved {
				if cp.Pending == nil || len(cp.Pending.Reply.ToolCalls) != 3 {
					continue
				}
				var want []string
				for i, res := range cp.Pending.Results {
					require.Equal(t, cp.Pending.Reply.ToolCalls[i].ID, res.CallID, "results are saved in call order, as a prefix")
					want = append(want, []string{"cheese", "milk", "bread"}[i])
				}
				var st struct{ List []string }
				require.NoError(t, json.Unmarshal(cp.State, &st))
				if len(want) == 0 {
					assert.Empty(t, st.List, "checkpoint %d: no result saved, no change", cp.Seq)
				} else {
					assert.Equal(t, want, st.List, "checkpoint %d: the list holds the items of the saved results only", cp.Seq)
				}
			}
		}
	})
}

// recordingStore keeps a copy of every checkpoint saved.
type recordingStore struct {
	session.Store
	mu    sync.Mutex
	saved []session.Checkpoint
}

func (s *recordingStore) Save(ctx context.Context, cp *session.Checkpoint) error {
	s.mu.Lock()
	c := *cp
	if cp.Pending != nil {
		p := *cp.Pending
		p.Results = slices.Clone(p.Results)
		c.Pending = &p
	}
	s.saved = append(s.saved, c)
	s.mu.Unlock()
	return s.Store.Save(ctx, cp)
}
