// Package lanes is how the provider adapters share their cached request
// encodings among the conversations of one model (an agent and its
// sub-agents): each conversation has a lane, the request goes to the lane
// that holds the longest prefix of its messages (Pick), a new
// conversation gets a free or the least recently used lane (Other), and a
// rewrite is told from another conversation that opens alike (Diverged).
// What a lane holds, and how a message is compared on the wire, stays
// with each adapter. Only the provider adapters import it.
package lanes

import "github.com/reprompt/reprompt/defs"

// Lane is a lane as Pick and Other see it.
type Lane interface {
	// Len returns how many messages the lane holds.
	Len() int
	// LastUse returns the clock of the lane's last use.
	LastUse() uint64
}

// Pick returns the lane of ls that holds the longest prefix of a
// request's n messages, and that prefix's length; same(l, i) reports
// whether message i of lane l is the request's message i (i is below
// both lengths). On a tie the longer lane wins (the conversation the
// request continues, whose messages a rewrite may find again, not one
// that opened alike), then the one used last. When no lane holds even the
// first message, Pick returns the zero L and 0.
func Pick[L Lane](ls []L, n int, same func(l L, i int) bool) (best L, p int) {
	for _, l := range ls {
		q := 0
		for q < min(n, l.Len()) && same(l, q) {
			q++
		}
		if q > 0 && (q > p || q == p && (l.Len() > best.Len() || l.Len() == best.Len() && l.LastUse() > best.LastUse())) {
			best, p = l, q
		}
	}
	return best, p
}

// Other returns a new lane, appended to *ls, while *ls holds fewer than
// maxLanes; then the least recently used lane but not (a lane whose
// conversation is left alone), emptied: set to the zero L. maxLanes is at
// least 2.
func Other[L any, P interface {
	*L
	Lane
}](ls *[]P, maxLanes int, not P) P {
	if len(*ls) < maxLanes {
		l := P(new(L))
		*ls = append(*ls, l)
		return l
	}
	lru := -1
	for i, l := range *ls {
		if l != not && (lru < 0 || l.LastUse() < (*ls)[lru].LastUse()) {
			lru = i
		}
	}
	l := (*ls)[lru]
	var zero L
	*l = zero
	return l
}

// Diverged reports whether a request whose first p messages a lane of
// held messages holds, and which reused none of the lane's messages after
// them, is another conversation that opens as the lane's does (the runs
// of one eval case, sub-agents given one task) rather than a rewrite of
// the lane's conversation: a rewrite keeps messages after its first
// change, or changes only the end. The lane then stays its own, and the
// request goes to Other.
func Diverged(held, p, reused int) bool {
	return reused == 0 && held-p > p
}

// Key narrows the search for a message in a rewritten transcript: its
// role, the length of its content, and its tool call's id (that of its
// first tool call, for an assistant message).
type Key struct {
	Role defs.Role
	N    int
	ID   string
}

// KeyOf returns m's Key.
func KeyOf(m *defs.Message) Key {
	k := Key{Role: m.Role, N: len(m.Content), ID: m.ToolCallID}
	if len(m.ToolCalls) > 0 {
		k.ID = m.ToolCalls[0].ID
	}
	return k
}
