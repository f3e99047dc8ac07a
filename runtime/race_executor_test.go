package runtime_test

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// twiceFinisher reports the result of every call twice at once, from two
// goroutines, with a change to key "n" each: ToolCalls is safe for
// concurrent use, and a second Finish of a call is an error.
type twiceFinisher struct {
	mu   sync.Mutex
	errs []error
	won  int // the value of n the Finish that succeeded set
}

func (x *twiceFinisher) ExecuteTools(_ context.Context, c *runtime.ToolCalls) error {
	for _, i := range c.Pending() {
		var wg sync.WaitGroup
		start := make(chan struct{})
		for v := range 2 {
			wg.Go(func() {
				<-start
				err := c.Finish(i, "ok", false, map[string]json.RawMessage{"n": json.RawMessage([]byte{'1' + byte(v)})}, nil)
				x.mu.Lock()
				x.errs = append(x.errs, err)
				if err == nil {
					x.won = v + 1
				}
				x.mu.Unlock()
			})
		}
		close(start)
		wg.Wait()
	}
	return nil
}

// Two concurrent Finish calls of one call: one records the result and its
// change, the other is an error and changes nothing. Before the fix, both
// could pass the check, the second's change could be applied to the live
// state at once (the first's Unbind unbound the second's goroutine), and a
// goroutine was left bound to the transaction.
func TestConcurrentFinishOfOneCall(t *testing.T) {
	fn := func(p *prompt.Prompt) error {
		prompt.State(p, "n", 0)
		prompt.DefTool(p, "t", "T.", func(context.Context, noArgs) (string, error) { return "ran", nil })
		p.User("go")
		return nil
	}
	for range 200 {
		x := &twiceFinisher{}
		m := snapshots.Script(snapshots.CallTool("t", nil), snapshots.Text("done"))
		res := run(t, m, fn, runtime.Config{ToolExecutor: x})
		failed := 0
		for _, err := range x.errs {
			if err != nil {
				failed++
			}
		}
		require.Equal(t, 1, failed, "failed ones of 2 concurrent Finish calls of one call: %v", x.errs)
		n, err := json.Marshal(res.Steps[0].State["n"])
		require.NoError(t, err, "marshal n")
		require.Equal(t, strconv.Itoa(x.won), string(n), "n, want the change of the Finish that succeeded")
	}
}
