package runtime

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
)

// lenCounter counts a byte a token and records what it tokenises.
type lenCounter struct{ seen map[string]int }

func (lenCounter) Text(s string) int { return len(s) }
func (c lenCounter) Message(m defs.Message) int {
	c.seen[m.Content]++
	return len(m.Role) + len(m.Content)
}
func (lenCounter) Tool(n, d string, p json.RawMessage) int { return len(n) + len(d) + len(p) }

func msgs(names ...string) []defs.Message {
	out := make([]defs.Message, len(names))
	for i, n := range names {
		out[i] = defs.UserMessage(n)
	}
	return out
}

// TestLedgerCountsOnlyChangedMessages rewrites a transcript in the ways
// effects do (trim one message, drop a middle part, reorder, with and
// without the content cache) and checks the sums against a count from
// scratch and that only messages never seen are tokenised.
func TestLedgerCountsOnlyChangedMessages(t *testing.T) {
	c := lenCounter{seen: map[string]int{}}
	l := newLedger(c)
	check := func(step string, tr []defs.Message, wantNew ...string) {
		t.Helper()
		before := map[string]int{}
		for k, v := range c.seen {
			before[k] = v
		}
		l.sync(tr)
		total := 0
		for i, m := range tr {
			assert.Equal(t, total, l.prefix(i), "%s: prefix(%d)", step, i)
			total += len(m.Role) + len(m.Content)
		}
		assert.Equal(t, total, l.count(tr), "%s: count", step)
		for k, v := range c.seen {
			assert.LessOrEqual(t, v, 1, "%s: times %q was tokenised", step, k)
		}
		var got []string
		for k, v := range c.seen {
			if v > before[k] {
				got = append(got, k)
			}
		}
		assert.Len(t, got, len(wantNew), "%s: tokenised %q, want %q", step, got, wantNew)
	}
	tr := msgs("task", "a1", "r1", "a2", "r2")
	check("first", tr, "task", "a1", "r1", "a2", "r2")
	tr = append(tr, msgs("a3", "r3")...)
	check("appended", tr, "a3", "r3")
	tr = append(msgs("task", "a1", "r1 trimmed"), tr[3:]...)
	check("trimmed", tr, "r1 trimmed")
	tr = append(msgs("task", "summary"), tr[5:]...)
	check("compacted", tr, "summary")
	tr = msgs("a3", "task", "summary", "r3")
	check("reordered", tr)
	check("emptied", nil)
	for i := range 3 {
		tr = append(tr, defs.UserMessage("more"+strconv.Itoa(i)))
	}
	check("again", tr, "more0", "more1", "more2")
	// As if the cache had dropped them (it keeps the transcript's counts,
	// but a rewrite that moves messages falls back on the transcript
	// before it anyway).
	l.cache = [2]map[uint64]int{}
	tr = msgs("r3", "new", "summary", "task", "a3", "more2")
	check("reordered after eviction", tr, "new")
}

// TestLedgerMatchedAfterRewrites checks, over random runs of appends and
// rewrites (0 to 2 between requests, some appends reallocating the
// transcript, some requests with a view message past the transcript), that
// the prefix requestTokens finds shared with the previous request is the
// one a comparison from scratch finds.
func TestLedgerMatchedAfterRewrites(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for run := range 200 {
		l := newLedger(lenCounter{seen: map[string]int{}})
		var tr []defs.Message
		var prev *llm.Request
		next := 0
		fresh := func() defs.Message { next++; return defs.UserMessage("m" + strconv.Itoa(next)) }
		for step := range 30 {
			for range rng.IntN(4) {
				if rng.IntN(5) == 0 {
					tr = slices.Clone(tr) // the array moves
				}
				tr = append(tr, fresh())
				l.sync(tr)
			}
			for range rng.IntN(3) {
				if len(tr) == 0 {
					break
				}
				tr = slices.Clone(tr)
				switch rng.IntN(3) {
				case 0: // trim one message
					tr[rng.IntN(len(tr))] = fresh()
				case 1: // drop a middle part
					i := rng.IntN(len(tr))
					tr = slices.Delete(tr, i, i+rng.IntN(len(tr)-i)+1)
				default: // nothing changed, but a new array
				}
				l.sync(tr)
			}
			l.sync(tr)
			req := &llm.Request{Messages: tr}
			verbatim := len(tr)
			if rng.IntN(3) == 0 {
				req.Messages = append(slices.Clip(tr), defs.UserMessage("view"))
			}
			l.requestTokens(req, verbatim)
			if prev != nil {
				want := commonPrefix(prev.Messages, req.Messages)
				if !assert.Equal(t, want, l.matched, "run %d step %d", run, step) {
					return
				}
			}
			prev = req
		}
	}
}

// TestSameMessageComparesMeta: a rewrite that changes only a message's Meta
// (an effect stripping Anthropic's thinking blocks) is a change, and the
// Meta a rewrite copies with its message compares as the same.
func TestSameMessageComparesMeta(t *testing.T) {
	m := defs.Message{Role: defs.RoleAssistant, Content: "x", Meta: map[string]string{"thinking": `[{"type":"thinking"}]`}}
	copied := m
	assert.True(t, sameMessage(m, copied), "the same map")
	rebuilt := m
	rebuilt.Meta = map[string]string{"thinking": `[{"type":"thinking"}]`}
	assert.True(t, sameMessage(m, rebuilt), "equal maps")
	stripped := m
	stripped.Meta = nil
	assert.False(t, sameMessage(m, stripped), "Meta dropped")
	changed := m
	changed.Meta = map[string]string{"thinking": `[]`}
	assert.False(t, sameMessage(m, changed), "Meta changed")
	assert.True(t, sameMessage(defs.Message{Role: defs.RoleUser}, defs.Message{Role: defs.RoleUser, Meta: map[string]string{}}), "nil and empty")
}
