package session

import "testing"

// DamageMemory applies damage to session id's latest checkpoint in m: to its
// head when onHead, else to the row of the last message of its generation.
// apply returning nil removes the row.
func DamageMemory(t *testing.T, m *Memory, id string, onHead bool, apply func([]byte) []byte) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[id]
	if s == nil {
		t.Fatalf("DamageMemory: no session %q", id)
	}
	if onHead {
		h := &s.heads[s.tip.Seq-1]
		h.data = apply(h.data)
		return
	}
	g := s.msgs[s.tip.Generation]
	last := s.tip.Messages - 1
	if last < 0 || g == nil || last < g.first || last >= g.first+len(g.rows) {
		t.Fatalf("DamageMemory: session %q has no last message in its generation", id)
	}
	g.rows[last-g.first] = apply(g.rows[last-g.first])
}
