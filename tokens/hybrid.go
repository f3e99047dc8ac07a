package tokens

import (
	"math"
	"sync"

	"github.com/reprompt/reprompt/defs"
)

// Bounds of a Hybrid's calibration ratio.
const (
	MinRatio = 0.5
	MaxRatio = 2.0
)

// Hybrid estimates the tokens of a transcript for a model whose tokenizer is
// unknown: the usage the provider reported for the last request, plus an
// estimate of the messages after it calibrated against that report.
//
// After each reply, Observe records the request, what was sent beside its
// messages (fixed) and the reported input and output tokens. It sets the
// calibration ratio
//
//	r = reportedInput / (fixed + E(request))
//
// clamped to [MinRatio, MaxRatio] (1 before any report, or when the
// denominator is 0), where E is the Counter's count. Estimate(msgs) is then
//
//	max(0, reportedInput − S(fixed) − S(E(request[k:])))   the reported part msgs still holds
//	+ reply                                                  msgs[k], when it is the reply
//	+ S(E(msgs[k+1:]))                                       (or msgs[k:] when msgs[k] is not the reply)
//
// where S(x) = round(r·x), k is the length of the longest common prefix of
// msgs and the request (by content), and msgs[k] is taken as the reply when
// it is an assistant message and request[k:] holds none (what the request
// had past k were view-only messages, such as reminders); the reply counts
// reportedOutput + MessageOverhead + the role's tokens. Before any report,
// Estimate is E(msgs).
//
// Estimate counts messages only, as effects.Budget.Count does; the part sent
// beside them must be scaled the same way: set Budget.Fixed to
// Scale(Counter count of the system prompt and tool list + ReplyPriming).
// Then Fixed + Estimate(msgs) equals reportedInput + reply + S(E(newer
// messages)) whenever the ratio is not clamped.
//
// Estimate costs what Accountant.Count costs plus O(log len(msgs)); Observe
// copies the request's prefix sums, O(len(request)). A Hybrid is safe for
// concurrent use. Make one with NewHybrid.
type Hybrid struct {
	a *Accountant

	mu        sync.Mutex
	observed  bool
	chain     []uint64 // chain hashes of the request
	prefix    []int    // prefix sums of the request
	assistant int      // index of the request's last assistant message, -1 if none
	fixed     int
	input     int
	output    int
	ratio     float64
	roleCount int
}

// NewHybrid returns a Hybrid counting under c, typically an Estimator.
func NewHybrid(c Counter) *Hybrid {
	return &Hybrid{a: NewAccountant(c), ratio: 1, roleCount: c.Text(string(defs.RoleAssistant))}
}

// Accountant returns the Accountant h counts with. Counting with it
// directly gives uncalibrated counts.
func (h *Hybrid) Accountant() *Accountant { return h.a }

// Observe records the usage a provider reported for request: fixed is the
// Counter's count of what the request sent beside its messages (system
// prompt, tool list, ReplyPriming), reportedInput and reportedOutput the
// tokens the provider reported. Pass the output tokens without reasoning
// tokens when reasoning is not sent back (Usage.OutputTokens −
// Usage.ReasoningTokens). A report with reportedInput ≤ 0 (the provider
// reported nothing) is ignored. request is read, never modified.
func (h *Hybrid) Observe(request []defs.Message, fixed, reportedInput, reportedOutput int) {
	if reportedInput <= 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.a.mu.Lock()
	t := h.a.sync(request)
	h.chain = append(h.chain[:0], t.chain...)
	h.prefix = append(h.prefix[:0], t.prefix...)
	h.a.mu.Unlock()
	h.assistant = -1
	for i := len(request) - 1; i >= 0; i-- {
		if request[i].Role == defs.RoleAssistant {
			h.assistant = i
			break
		}
	}
	h.observed = true
	h.fixed, h.input, h.output = fixed, reportedInput, max(0, reportedOutput)
	h.ratio = 1
	if est := fixed + h.prefix[len(h.prefix)-1]; est > 0 {
		h.ratio = min(MaxRatio, max(MinRatio, float64(reportedInput)/float64(est)))
	}
}

// Ratio returns the calibration ratio of the last report: reported over
// estimated input tokens, clamped to [MinRatio, MaxRatio]; 1 before any.
func (h *Hybrid) Ratio() float64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ratio
}

// Scale returns tokens calibrated by the ratio of the last report, rounded
// to the nearest integer.
func (h *Hybrid) Scale(tokens int) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.scale(tokens)
}

func (h *Hybrid) scale(n int) int { return int(math.Round(h.ratio * float64(n))) }

// Estimate returns the estimated token count of msgs, as the Hybrid's
// documentation defines it. It has the signature of effects.Budget.Count.
// msgs is read, never modified.
func (h *Hybrid) Estimate(msgs []defs.Message) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.a.mu.Lock()
	defer h.a.mu.Unlock()
	t := h.a.sync(msgs)
	if !h.observed {
		return t.total()
	}
	// The longest common prefix: chain hashes agree up to k, then differ.
	n := min(len(h.chain), len(t.chain)) - 1
	lo, hi := 0, n // chain[lo] agrees; find the last index that does
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if h.chain[mid] == t.chain[mid] {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	k := lo
	reqTotal := h.prefix[len(h.prefix)-1]
	est := max(0, h.input-h.scale(h.fixed)-h.scale(reqTotal-h.prefix[k]))
	from := k
	if k < len(msgs) && msgs[k].Role == defs.RoleAssistant && h.assistant < k {
		est += h.output + MessageOverhead + h.roleCount
		from = k + 1
	}
	return est + h.scale(t.total()-t.prefix[from])
}
