package runtime

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/internal/msghash"
	"github.com/reprompt/reprompt/internal/stepmods"
	"github.com/reprompt/reprompt/llm"
)

// estimator is the Counter used when Config.Counter is nil: four
// characters a token, plus framing.
type estimator struct{}

func (estimator) Text(s string) int          { return (len(s) + 3) / 4 }
func (estimator) Message(m defs.Message) int { return stepmods.EstimateTokens(m) }
func (estimator) Tool(n, d string, p json.RawMessage) int {
	return 8 + (len(n)+len(d)+len(p)+3)/4
}

// ledger keeps the token count of every transcript message as prefix sums,
// extended as the transcript grows and patched when it is rewritten, so
// that counting a step's request costs only its new or changed messages.
//
// No message the ledger counted is tokenised again while it stays in the
// transcript: after a rewrite, the messages before the first change keep
// their sums, a message at the same position as an identical one keeps its
// count, and any other message is looked up by content, first among the
// messages counted lately (a content-keyed cache of at most cacheSize
// entries), then among those of the transcript before the rewrite. (The
// built-in estimate costs less than the lookup: with it, a message that
// moved is estimated again.)
type ledger struct {
	c      Counter
	cum    []int          // cum[i] is the count of transcript[:i]
	hashes []uint64       // hashes[i] is the content hash of transcript[i], when memo
	first  *defs.Message  // &transcript[0] when cum was built
	msgs   []defs.Message // the transcript cum describes
	cache  [2]map[uint64]int
	old    map[uint64]int // hash → count of the transcript before a rewrite, built on demand
	sys    string         // last system prompt counted
	sysN   int
	tools  []llm.ToolSpec // last tool list counted
	toolN  int
	out    *llm.OutputSpec // last native output counted (see outputTokens)
	outN   int
	prev   *llm.Request // the previous request, for the shared prefix
	prevV  int          // its verbatim transcript messages
	prevE  int          // the transcript epoch it was built from
	// sent, sentV and sentE are prev, prevV and prevE before requestTokens
	// moved them to the request it counted (see unsend).
	sent         *llm.Request
	sentV, sentE int
	// matched is, after requestTokens, how many of the previous request's
	// messages the request repeats as an exact prefix, or -1 when its
	// system prompt, tools or native output differ (see cacheMiss).
	matched int
	epoch   int // incremented when the transcript is rewritten
	// kept is, after a rewrite, how many leading messages of the
	// transcript it left as they were (sync compares them anyway).
	kept  int
	exact bool    // the counter is a real tokenizer
	memo  bool    // counts are worth caching by content (not the built-in estimate)
	calib float64 // scale of an estimate, see observe

	// The prefix sums and hashes of the transcript before the last
	// rewrite, reused at the next one: a rewrite reads the old ones while
	// it writes the new ones.
	spareCum    []int
	spareHashes []uint64
}

// cacheSize bounds the ledger's content-keyed cache: it remembers the
// counts of at least cacheSize/2 and at most cacheSize messages counted
// last, besides those of the transcript.
const cacheSize = 8192

func newLedger(c Counter) *ledger {
	if c == nil {
		c = estimator{}
	}
	_, cheap := c.(estimator)
	l := &ledger{c: c, cum: []int{0}, calib: 1, memo: !cheap}
	if e, ok := c.(interface{ Exact() bool }); ok && e.Exact() {
		l.exact = true
	}
	return l
}

// The calibration of an estimate: when the counter is not exact, counts are
// scaled by the ratio of the input tokens the provider reported for the
// last request to the ledger's own count of it, kept within these bounds.
const minCalibration, maxCalibration = 0.5, 2.0

// observe records the provider's count of a request the ledger counted.
func (l *ledger) observe(counted, reported int) {
	if l.exact || counted <= 0 || reported <= 0 {
		return
	}
	// counted is already scaled; undo it to compare raw counts.
	raw := float64(counted) / l.calib
	l.calib = min(max(float64(reported)/raw, minCalibration), maxCalibration)
}

// scale applies the calibration to a raw count.
func (l *ledger) scale(n int) int {
	if l.calib == 1 {
		return n
	}
	return int(float64(n)*l.calib + 0.5)
}

// sync brings the prefix sums up to date with transcript, in time
// proportional to the new messages; after a rewrite, to the changed
// messages plus a shallow comparison of the others.
func (l *ledger) sync(transcript []defs.Message) {
	if len(transcript) == 0 {
		if len(l.msgs) > 0 {
			l.epoch++
		}
		l.kept = 0
		l.truncate(0)
		l.first, l.msgs = nil, nil
		return
	}
	if l.first == &transcript[0] && len(transcript) >= len(l.msgs) {
		// Grown by appending: a transcript message is never changed in
		// place.
		for i := len(l.msgs); i < len(transcript); i++ {
			l.push(&transcript[i])
		}
		l.msgs = transcript
		return
	}
	// Rewritten: keep the unchanged prefix, then reuse the count of every
	// message identical to the one at its position before, and look the
	// others up by content.
	if l.first != nil {
		l.epoch++
	}
	old := l.msgs
	k := 0
	for k < len(old) && k < len(transcript) && sameMessage(old[k], transcript[k]) {
		k++
	}
	l.kept = k
	oldCum, oldHashes := l.cum, l.hashes
	l.cum = append(l.spareCum[:0], oldCum[:k+1]...)
	if l.memo {
		l.hashes = append(l.spareHashes[:0], oldHashes[:k]...)
	}
	for i := k; i < len(transcript); i++ {
		m := &transcript[i]
		if i < len(old) && sameMessage(old[i], *m) {
			var h uint64
			if l.memo {
				h = oldHashes[i]
			}
			l.add(oldCum[i+1]-oldCum[i], h)
			continue
		}
		if !l.memo {
			l.add(l.c.Message(*m), 0)
			continue
		}
		h := msghash.Message(m)
		n, ok := l.cached(h)
		if !ok {
			if n, ok = l.before(h, old, oldHashes, oldCum); !ok {
				n = l.c.Message(*m)
			}
			l.remember(h, n)
		}
		l.add(n, h)
	}
	clear(l.old)
	l.spareCum, l.spareHashes = oldCum, oldHashes
	l.first, l.msgs = &transcript[0], transcript
}

// push counts m (or finds its count by content) and appends it.
func (l *ledger) push(m *defs.Message) {
	h, n := l.message(m)
	l.add(n, h)
}

// message returns the content hash (0 when counts are not cached) and the
// count of m, counting it only if its count is not cached.
func (l *ledger) message(m *defs.Message) (uint64, int) {
	if !l.memo {
		return 0, l.c.Message(*m)
	}
	h := msghash.Message(m)
	n, ok := l.cached(h)
	if !ok {
		n = l.c.Message(*m)
		l.remember(h, n)
	}
	return h, n
}

func (l *ledger) add(n int, h uint64) {
	l.cum = append(l.cum, l.cum[len(l.cum)-1]+n)
	if l.memo {
		l.hashes = append(l.hashes, h)
	}
}

func (l *ledger) truncate(k int) {
	l.cum = l.cum[:k+1]
	if l.memo {
		l.hashes = l.hashes[:k]
	}
}

// before returns the count of the message of hash h in the transcript
// before a rewrite (old, with its hashes and prefix sums), if it was there.
func (l *ledger) before(h uint64, old []defs.Message, hashes []uint64, cum []int) (int, bool) {
	if len(old) == 0 {
		return 0, false
	}
	if len(l.old) == 0 {
		if l.old == nil {
			l.old = make(map[uint64]int, len(old))
		}
		for i := range old {
			l.old[hashes[i]] = cum[i+1] - cum[i]
		}
	}
	n, ok := l.old[h]
	return n, ok
}

// cached returns the count of the message of hash h if it was counted
// lately.
func (l *ledger) cached(h uint64) (int, bool) {
	if n, ok := l.cache[0][h]; ok {
		return n, true
	}
	n, ok := l.cache[1][h]
	return n, ok
}

// remember caches a count, keeping two generations of cacheSize/2
// entries (more when the transcript is longer). A new generation starts
// with the counts of the transcript, so that they are never dropped.
func (l *ledger) remember(h uint64, n int) {
	if l.cache[0] == nil || len(l.cache[0]) >= max(cacheSize/2, 2*len(l.hashes)) {
		l.cache[1] = l.cache[0]
		l.cache[0] = make(map[uint64]int, max(64, 2*len(l.hashes)))
		for i, h := range l.hashes {
			l.cache[0][h] = l.cum[i+1] - l.cum[i]
		}
	}
	l.cache[0][h] = n
}

// prefix returns the (calibrated) count of the first k transcript
// messages.
func (l *ledger) prefix(k int) int {
	if k >= len(l.cum) {
		k = len(l.cum) - 1
	}
	return l.scale(l.cum[k])
}

// count returns the count of msgs: from the prefix sums when msgs is the
// synced transcript or a prefix of it, or starts as a copy of it; message
// by message otherwise, each one looked up by content before it is
// counted.
func (l *ledger) count(msgs []defs.Message) int {
	if len(msgs) == 0 {
		return 0
	}
	if &msgs[0] == l.first && len(msgs) < len(l.cum) {
		return l.scale(l.cum[len(msgs)])
	}
	k := 0
	for k < len(msgs) && k < len(l.msgs) && sameMessage(msgs[k], l.msgs[k]) {
		k++
	}
	n := l.cum[k]
	for i := k; i < len(msgs); i++ {
		_, c := l.message(&msgs[i])
		n += c
	}
	return l.scale(n)
}

// fixed returns the count of the system prompt and tool schemas, counting
// again only what changed.
func (l *ledger) fixed(system string, tools []llm.ToolSpec) int {
	if system != l.sys || l.sysN == 0 && system != "" {
		l.sys, l.sysN = system, l.c.Text(system)
	}
	if !sameTools(tools, l.tools) || l.toolN == 0 && len(tools) > 0 {
		l.tools, l.toolN = tools, 0
		for _, t := range tools {
			l.toolN += l.c.Tool(t.Name, t.Description, t.Parameters)
		}
	}
	return l.sysN + l.toolN
}

func sameTools(a, b []llm.ToolSpec) bool {
	return slices.EqualFunc(a, b, func(x, y llm.ToolSpec) bool {
		return x.Name == y.Name && x.Description == y.Description && string(x.Parameters) == string(y.Parameters)
	})
}

// requestTokens returns the input tokens of req, whose first verbatim
// messages are the synced transcript, and the tokens it shares as a prefix
// with the previous request (what a provider's prompt cache can reuse).
func (l *ledger) requestTokens(req *llm.Request, verbatim int) (input, shared int) {
	fixed := l.scale(l.fixed(req.System, req.Tools) + l.outputTokens(req.Output))
	input = fixed + l.prefix(verbatim) + l.count(req.Messages[verbatim:])
	prev := l.prev
	l.matched = -1
	if prev != nil && prev.System == req.System && sameTools(prev.Tools, req.Tools) && sameNativeOutput(prev.Output, req.Output) {
		var k int
		switch {
		case l.prevE == l.epoch && verbatim > 0 && l.prevV > 0:
			k = min(verbatim, l.prevV)
		case l.prevE+1 == l.epoch && verbatim > 0 && l.prevV > 0:
			// One rewrite since: the previous request's verbatim part was
			// a prefix of the transcript the rewrite replaced, whose first
			// kept messages it left alone, so the two requests agree up to
			// there and differ at the first message it changed (if the
			// previous request had it verbatim), found without comparing
			// the history again.
			k = min(verbatim, l.prevV, l.kept)
		}
		// Messages past the part known to match may still match.
		for k < len(prev.Messages) && k < len(req.Messages) && sameMessage(prev.Messages[k], req.Messages[k]) {
			k++
		}
		l.matched = k
		if k <= verbatim {
			shared = fixed + l.prefix(k)
		} else {
			shared = fixed + l.prefix(verbatim) + l.count(req.Messages[verbatim:k])
		}
	}
	l.sent, l.sentV, l.sentE = l.prev, l.prevV, l.prevE
	l.prev, l.prevV, l.prevE = req, verbatim, l.epoch
	return input, shared
}

// unsend takes back the last request requestTokens counted, which the
// provider rejected: the previous request is again the one before it.
func (l *ledger) unsend() {
	l.prev, l.prevV, l.prevE = l.sent, l.sentV, l.sentE
}

func commonPrefix(a, b []defs.Message) int {
	k := 0
	for k < len(a) && k < len(b) && sameMessage(a[k], b[k]) {
		k++
	}
	return k
}

// sameMessage reports whether a and b are the same message as a request
// shows it and a counter counts it: every field, Meta included, whose
// keys some providers send (Anthropic's thinking blocks); the Meta a
// rewrite copies along with its message compares at once.
func sameMessage(a, b defs.Message) bool {
	return a.Role == b.Role && a.Content == b.Content && a.Reasoning == b.Reasoning && a.IsError == b.IsError &&
		a.ToolCallID == b.ToolCallID && a.Name == b.Name &&
		slices.EqualFunc(a.ToolCalls, b.ToolCalls, func(x, y defs.ToolCall) bool {
			return x.ID == y.ID && x.Name == y.Name && string(x.Arguments) == string(y.Arguments)
		}) && sameMeta(a.Meta, b.Meta) // an adapter may send some of it (Anthropic's thinking blocks)
}

// sameMeta reports whether a and b hold the same entries: at once when
// they are the same map, as in a message a rewrite copied.
func sameMeta(a, b map[string]string) bool {
	switch {
	case len(a) != len(b):
		return false
	case len(a) == 0:
		return true
	case reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer():
		return true
	}
	return maps.Equal(a, b)
}
