package tokens

import (
	"sync"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/internal/msghash"
)

// CacheSize bounds the content-keyed cache of an Accountant: it remembers
// the counts of at least the CacheSize/2 and at most the CacheSize messages
// counted last.
const CacheSize = 8192

// tracks is the number of transcripts (distinct backing arrays) an
// Accountant follows at once: the run's transcript and the request built
// from it.
const tracks = 2

// Accountant counts the tokens of a transcript incrementally under one
// Counter, so that a step costs only what is new.
//
// Count remembers per-message counts, prefix sums and a shallow copy of the
// counted messages for the last two slices it saw (by backing array). When
// msgs starts at the same address as one of them, the messages below the
// shortest of the last eight distinct lengths counted on that array are
// trusted, the rest of the overlap is checked shallowly (strings compared by
// address first), and only new or changed messages are counted: a transcript
// that grows by appending costs O(new messages), and so does a request made
// of the transcript plus a tail written into the transcript's spare capacity,
// even when the transcript's growth later overwrites that tail. Any other slice (a copy, a
// compacted transcript) is compared message by message with the remembered
// ones, without hashing, and its changed messages are looked up in a
// content-keyed cache (role, content, name, tool calls, tool call ID) of at
// most CacheSize entries before they are counted. On a new array nothing is
// trusted at first: its next counts check the whole overlap until eight
// distinct lengths were counted on it, so a transcript reallocated by append
// costs O(len) shallow comparisons a few times per doubling of its capacity.
//
// Count relies on what defs.Message documents: a message in a transcript is
// never changed in place. What it cannot see is a message overwritten in
// place below all of the last eight distinct lengths counted on its array
// (which takes eight requests of different lengths, all longer than the
// transcript, between two counts of the transcript).
//
// An Accountant is safe for concurrent use. Its zero value is not usable:
// make one with NewAccountant.
type Accountant struct {
	c Counter

	mu       sync.Mutex
	tick     uint64
	tr       [tracks]track
	cur      *track // the track of the last Count; nil before any
	cache    [2]map[uint64]int
	tools    toolCache
	hashed   uint64 // messages hashed (tests)
	compared uint64 // messages compared shallowly (tests)
}

// history is how many distinct lengths a track remembers: the messages
// below the shortest of them are trusted without a check.
const history = 8

// track is what an Accountant remembers of one backing array.
type track struct {
	first  *defs.Message
	ids    []ident      // shallow copies of the messages counted
	prefix []int        // prefix[i] is the count of ids[:i]
	chain  []uint64     // chain[i] is a hash of the contents of ids[:i]
	lens   [history]int // the last distinct lengths counted on this track
	nlens  int          // number of lengths pushed, for the ring's position
	used   uint64
}

// ident is the part of a message that is counted.
type ident struct {
	role    defs.Role
	content string
	name    string
	callID  string
	calls   []defs.ToolCall
}

func identOf(m *defs.Message) ident {
	return ident{m.Role, m.Content, m.Name, m.ToolCallID, m.ToolCalls}
}

// same reports whether m counts as id. Strings that share memory compare in
// O(1).
func (id *ident) same(m *defs.Message) bool {
	if id.role != m.Role || id.content != m.Content || id.name != m.Name || id.callID != m.ToolCallID {
		return false
	}
	if len(id.calls) != len(m.ToolCalls) {
		return false
	}
	if len(id.calls) == 0 || &id.calls[0] == &m.ToolCalls[0] {
		return true
	}
	for i := range id.calls {
		a, b := &id.calls[i], &m.ToolCalls[i]
		if a.ID != b.ID || a.Name != b.Name || string(a.Arguments) != string(b.Arguments) {
			return false
		}
	}
	return true
}

// NewAccountant returns an Accountant counting under c.
func NewAccountant(c Counter) *Accountant {
	a := &Accountant{c: c}
	a.cache[0] = make(map[uint64]int)
	return a
}

// Counter returns the Counter a counts with.
func (a *Accountant) Counter() Counter { return a.c }

// Count returns the token count of msgs: the sum of the Counter's Message
// counts (no ReplyPriming). It has the signature of effects.Budget.Count.
// msgs is read, never modified, and is remembered until a later Count
// replaces it.
func (a *Accountant) Count(msgs []defs.Message) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sync(msgs).total()
}

// Prefix returns the token count of the first k messages of the slice last
// passed to Count, in O(1). k is clamped to [0, len]. It reports, for
// example, the tokens a request shares as a prefix with the previous one.
func (a *Accountant) Prefix(k int) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cur == nil {
		return 0
	}
	return a.cur.prefixAt(k)
}

func (t *track) total() int { return t.prefix[len(t.prefix)-1] }

func (t *track) prefixAt(k int) int {
	k = max(0, min(k, len(t.ids)))
	return t.prefix[k]
}

// sync brings a track up to date with msgs and returns it. a.mu is held.
func (a *Accountant) sync(msgs []defs.Message) *track {
	a.tick++
	if len(msgs) == 0 {
		a.cur = &emptyTrack
		return a.cur
	}
	first := &msgs[0]
	var t *track
	for i := range a.tr {
		if a.tr[i].first == first {
			t = &a.tr[i]
			break
		}
	}
	if t != nil {
		// The same backing array: trust the messages below the shortest
		// length seen lately, check the rest of the overlap, count what is
		// past it.
		overlap := min(len(msgs), len(t.ids))
		k := min(t.trusted(), overlap)
		a.compared += uint64(overlap - k)
		for k < overlap && t.ids[k].same(&msgs[k]) {
			k++
		}
		t.truncate(k)
	} else {
		// Another array: start from the remembered slice sharing the
		// longest prefix with msgs.
		var base *track
		k := 0
		for i := range a.tr {
			b := &a.tr[i]
			n := min(len(b.ids), len(msgs))
			j := 0
			for j < n && b.ids[j].same(&msgs[j]) {
				j++
			}
			if base == nil || j > k {
				base, k = b, j
			}
		}
		t = a.lru()
		if t != base {
			t.copyFrom(base, k)
		} else {
			t.truncate(k)
		}
		// Nothing is known of which part of a new array is a transcript:
		// trust nothing until eight more distinct lengths were counted.
		t.first = first
		t.nlens = 0
		t.push(0)
	}
	for i := len(t.ids); i < len(msgs); i++ {
		a.add(t, &msgs[i])
	}
	t.push(len(msgs))
	t.used = a.tick
	a.cur = t
	return t
}

// lru returns the track used least recently.
func (a *Accountant) lru() *track {
	t := &a.tr[0]
	for i := 1; i < len(a.tr); i++ {
		if a.tr[i].used < t.used {
			t = &a.tr[i]
		}
	}
	return t
}

// emptyTrack is the track of an empty slice; it is never modified.
var emptyTrack = track{prefix: []int{0}, chain: []uint64{0}}

// push records a length counted on t, unless it repeats the last one.
func (t *track) push(n int) {
	if t.nlens > 0 && t.lens[(t.nlens-1)%history] == n {
		return
	}
	t.lens[t.nlens%history] = n
	t.nlens++
}

// trusted returns the number of leading messages of t trusted without a
// check: the shortest of the last distinct lengths counted. A transcript is
// never changed in place, and a request built on it in its spare capacity
// is at least as long, so the transcript's length bounds what is trusted
// as long as one of those lengths was the transcript's or shorter.
func (t *track) trusted() int {
	if t.nlens == 0 {
		return 0
	}
	m := t.lens[0]
	for _, n := range t.lens[1:min(t.nlens, history)] {
		m = min(m, n)
	}
	return m
}

// truncate keeps the first k messages.
func (t *track) truncate(k int) {
	clear(t.ids[k:]) // drop references to the messages' memory
	t.ids = t.ids[:k]
	if len(t.prefix) == 0 {
		t.prefix = append(t.prefix, 0)
		t.chain = append(t.chain, 0)
	}
	t.prefix = t.prefix[:k+1]
	t.chain = t.chain[:k+1]
}

// copyFrom makes t the first k messages of b.
func (t *track) copyFrom(b *track, k int) {
	t.truncate(0)
	t.ids = append(t.ids, b.ids[:k]...)
	t.prefix = append(t.prefix[:0], b.prefix[:k+1]...)
	t.chain = append(t.chain[:0], b.chain[:k+1]...)
}

// add counts m and appends it to t.
func (a *Accountant) add(t *track, m *defs.Message) {
	h := msghash.Message(m)
	a.hashed++
	n, ok := a.cache[0][h]
	if !ok {
		if n, ok = a.cache[1][h]; !ok {
			n = a.c.Message(*m)
		}
		a.remember(h, n)
	}
	t.ids = append(t.ids, identOf(m))
	t.prefix = append(t.prefix, t.prefix[len(t.prefix)-1]+n)
	t.chain = append(t.chain, chainHash(t.chain[len(t.chain)-1], h))
}

// remember caches a count, keeping two generations of CacheSize/2 entries.
func (a *Accountant) remember(h uint64, n int) {
	if len(a.cache[0]) >= CacheSize/2 {
		a.cache[1] = a.cache[0]
		a.cache[0] = make(map[uint64]int, CacheSize/2)
	}
	a.cache[0][h] = n
}

// chainHash extends the hash of a prefix by one message's hash.
func chainHash(prev, h uint64) uint64 {
	x := (prev ^ h) * 0x9e3779b97f4a7c15
	x ^= x >> 29
	x *= 0xbf58476d1ce4e5b9
	return x ^ x>>32
}
