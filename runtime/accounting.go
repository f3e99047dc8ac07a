package runtime

import (
	"encoding/json"
	"slices"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
)

// estimator is the Counter used when Config.Counter is nil: four
// characters a token, plus framing.
type estimator struct{}

func (estimator) Text(s string) int          { return (len(s) + 3) / 4 }
func (estimator) Message(m defs.Message) int { return effects.EstimateTokens(m) }
func (estimator) Tool(n, d string, p json.RawMessage) int {
	return 8 + (len(n)+len(d)+len(p)+3)/4
}

// ledger keeps the token count of every transcript message as prefix sums,
// extended as the transcript grows and rebuilt when it is rewritten, so
// that counting a step's request costs only its new messages.
type ledger struct {
	c     Counter
	cum   []int          // cum[i] is the count of transcript[:i]
	first *defs.Message  // &transcript[0] when cum was built
	msgs  []defs.Message // the transcript cum describes
	sys   string         // last system prompt counted
	sysN  int
	tools []ToolSpec // last tool list counted
	toolN int
	prev  *Request // the previous request, for the shared prefix
	prevV int      // its verbatim transcript messages
	prevE int      // the transcript epoch it was built from
	epoch int      // incremented when the transcript is rewritten
	exact bool     // the counter is a real tokenizer
	calib float64  // scale of an estimate, see observe
}

func newLedger(c Counter) *ledger {
	if c == nil {
		c = estimator{}
	}
	l := &ledger{c: c, cum: []int{0}, calib: 1}
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
// proportional to the new messages (or to the whole transcript once after
// a rewrite).
func (l *ledger) sync(transcript []defs.Message) {
	if len(transcript) == 0 {
		if len(l.msgs) > 0 {
			l.epoch++
		}
		l.cum, l.first, l.msgs = l.cum[:1], nil, nil
		return
	}
	if l.first != &transcript[0] || len(transcript) < len(l.msgs) {
		if l.first != nil {
			l.epoch++
		}
		l.cum, l.first = l.cum[:1], &transcript[0]
	}
	for i := len(l.cum) - 1; i < len(transcript); i++ {
		l.cum = append(l.cum, l.cum[i]+l.c.Message(transcript[i]))
	}
	l.msgs = transcript
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
// synced transcript or a prefix of it, message by message otherwise.
func (l *ledger) count(msgs []defs.Message) int {
	if len(msgs) == 0 {
		return 0
	}
	if &msgs[0] == l.first && len(msgs) < len(l.cum) {
		return l.scale(l.cum[len(msgs)])
	}
	n := 0
	for _, m := range msgs {
		n += l.c.Message(m)
	}
	return l.scale(n)
}

// fixed returns the count of the system prompt and tool schemas, counting
// again only what changed.
func (l *ledger) fixed(system string, tools []ToolSpec) int {
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

func sameTools(a, b []ToolSpec) bool {
	return slices.EqualFunc(a, b, func(x, y ToolSpec) bool {
		return x.Name == y.Name && x.Description == y.Description && string(x.Parameters) == string(y.Parameters)
	})
}

// requestTokens returns the input tokens of req, whose first verbatim
// messages are the synced transcript, and the tokens it shares as a prefix
// with the previous request (what a provider's prompt cache can reuse).
func (l *ledger) requestTokens(req *Request, verbatim int) (input, shared int) {
	fixed := l.scale(l.fixed(req.System, req.Tools))
	input = fixed + l.prefix(verbatim) + l.count(req.Messages[verbatim:])
	prev := l.prev
	if prev != nil && prev.System == req.System && sameTools(prev.Tools, req.Tools) {
		var k int
		if l.prevE == l.epoch && verbatim > 0 && l.prevV > 0 {
			k = min(verbatim, l.prevV)
			// Messages past the verbatim part may still match.
			for k < len(prev.Messages) && k < len(req.Messages) && sameMessage(prev.Messages[k], req.Messages[k]) {
				k++
			}
		} else {
			k = commonPrefix(prev.Messages, req.Messages)
		}
		if k <= verbatim {
			shared = fixed + l.prefix(k)
		} else {
			shared = fixed + l.prefix(verbatim) + l.count(req.Messages[verbatim:k])
		}
	}
	l.prev, l.prevV, l.prevE = req, verbatim, l.epoch
	return input, shared
}

func commonPrefix(a, b []defs.Message) int {
	k := 0
	for k < len(a) && k < len(b) && sameMessage(a[k], b[k]) {
		k++
	}
	return k
}

func sameMessage(a, b defs.Message) bool {
	return a.Role == b.Role && a.Content == b.Content && a.ToolCallID == b.ToolCallID && a.Name == b.Name &&
		slices.EqualFunc(a.ToolCalls, b.ToolCalls, func(x, y defs.ToolCall) bool {
			return x.ID == y.ID && x.Name == y.Name && string(x.Arguments) == string(y.Arguments)
		})
}
