// Package msghash hashes messages by what a request sends of them, for the
// content-keyed token counts of package tokens and of the runtime's ledger.
package msghash

import (
	"encoding/binary"
	"hash/maphash"

	"github.com/reprompt/reprompt/defs"
)

var seed = maphash.MakeSeed()

// Message hashes the parts of m a request sends: role, content, name, call
// id and tool calls, each length-prefixed, so that two messages hash alike
// exactly when those parts are equal (but for a 64-bit collision, which
// among the messages of a run is vanishingly unlikely). The seed is chosen
// per process.
func Message(m *defs.Message) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	String(&h, string(m.Role))
	String(&h, m.Content)
	String(&h, m.Name)
	String(&h, m.ToolCallID)
	Len(&h, len(m.ToolCalls))
	for i := range m.ToolCalls {
		tc := &m.ToolCalls[i]
		String(&h, tc.ID)
		String(&h, tc.Name)
		Len(&h, len(tc.Arguments))
		h.Write(tc.Arguments)
	}
	return h.Sum64()
}

// Seed returns the seed Message uses, for hashing other values with String
// and Len.
func Seed() maphash.Seed { return seed }

// String writes s to h, prefixed by its length.
func String(h *maphash.Hash, s string) {
	Len(h, len(s))
	h.WriteString(s)
}

// Len writes n to h.
func Len(h *maphash.Hash, n int) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(n))
	h.Write(b[:])
}
