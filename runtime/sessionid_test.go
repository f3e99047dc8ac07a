package runtime_test

import (
	"context"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/runtime"
)

// sessionRecorder records the session, agent and purpose of every request.
type sessionRecorder struct {
	llm.Model
	mu   sync.Mutex
	seen []string
}

func (m *sessionRecorder) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	m.mu.Lock()
	m.seen = append(m.seen, req.SessionID+" agent="+req.Agent+" purpose="+string(req.Purpose))
	m.mu.Unlock()
	return m.Model.Generate(ctx, req)
}

// TestRequestsCarryTheSessionID: every request of a run carries
// Config.SessionID, its sub-agent's and the summaries' too, so that an
// adapter can key the provider's prompt cache by session.
func TestRequestsCarryTheSessionID(t *testing.T) {
	for _, id := range []string{"s-1", ""} {
		m := &sessionRecorder{Model: tracedScript()}
		_, err := runtime.Run(context.Background(), m, tracedAgent, runtime.Config{Name: "main", SessionID: id})
		require.NoError(t, err)
		want := []string{
			id + " agent= purpose=",
			id + " agent=helper purpose=",
			id + " agent=helper purpose=",
			id + " agent= purpose=summary",
			id + " agent= purpose=",
		}
		assert.Empty(t, cmp.Diff(want, m.seen), "session %q: requests mismatch (-want +got)", id)
	}
}
