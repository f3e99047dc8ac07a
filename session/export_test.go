package session

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// DamageMemory applies damage to session id's latest checkpoint in m: to its
// head when onHead, else to the row of the last message of its generation.
// apply returning nil removes the row.
func DamageMemory(t *testing.T, m *Memory, id string, onHead bool, apply func([]byte) []byte) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[id]
	require.NotNil(t, s, "DamageMemory: no session %q", id)
	if onHead {
		h := &s.heads[s.tip.Seq-1]
		h.data = apply(h.data)
		return
	}
	g := s.msgs[s.tip.Generation]
	last := s.tip.Messages - 1
	require.GreaterOrEqual(t, last, 0, "DamageMemory: session %q has no last message in its generation", id)
	require.NotNil(t, g, "DamageMemory: session %q has no last message in its generation", id)
	require.GreaterOrEqual(t, last, g.first, "DamageMemory: session %q has no last message in its generation", id)
	require.Less(t, last, g.first+len(g.rows), "DamageMemory: session %q has no last message in its generation", id)
	g.rows[last-g.first] = apply(g.rows[last-g.first])
}
