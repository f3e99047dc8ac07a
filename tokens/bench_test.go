package tokens

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/reprompt/reprompt/defs"
	"github.com/stretchr/testify/assert"
)

// stepRun replays an agent's steps: a transcript of n messages that grows
// by a reply and a tool result per step, counted after each step. Every
// round of roundSteps steps it starts again from the first n messages, with
// new contents so that the new messages are tokenized, not found in the
// cache.
type stepRun struct {
	a          *Accountant
	n          int
	transcript []defs.Message
	fresh      []defs.Message
	i          int
	round      int
}

const roundSteps = 50

func stepText(tag string, i, words int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d:", tag, i)
	for j := range words {
		b.WriteByte(' ')
		b.WriteString(benchWords[(i+j)%len(benchWords)])
	}
	return b.String()
}

var benchWords = strings.Fields(`the runtime counts tokens of each message once; a step costs only what is new,
	func (a *Accountant) Count(msgs []defs.Message) int { return a.sync(msgs).total() } // 42 ok`)

func newStepRun(c Counter, n int) *stepRun {
	s := &stepRun{a: NewAccountant(c), n: n}
	s.transcript = make([]defs.Message, n, n+2*roundSteps)
	for i := range n {
		s.transcript[i] = defs.UserMessage(stepText("old", i, 60))
	}
	s.a.Count(s.transcript)
	s.reset()
	return s
}

// reset starts a new round: the transcript back to n messages (same array)
// and new contents for the messages to come.
func (s *stepRun) reset() {
	s.round++
	s.transcript = s.transcript[:s.n]
	s.a.Count(s.transcript)
	s.fresh = s.fresh[:0]
	for i := range roundSteps {
		k := s.round*roundSteps + i
		s.fresh = append(s.fresh,
			defs.AssistantMessage(stepText("reply", k, 40)),
			defs.Message{Role: defs.RoleTool, Content: stepText("result", k, 120), ToolCallID: fmt.Sprint("call_", k)})
	}
	s.i = 0
}

// step appends two messages and counts the transcript.
func (s *stepRun) step() int {
	s.transcript = append(s.transcript, s.fresh[2*s.i], s.fresh[2*s.i+1])
	s.i++
	return s.a.Count(s.transcript)
}

// BenchmarkAccountantStep measures a step under o200k_base: the cost of
// tokenizing the two new messages, which does not depend on the transcript's
// length.
func BenchmarkAccountantStep(b *testing.B) { benchmarkSteps(b, O200k()) }

// BenchmarkAccountantStepEstimate measures a step under an Estimator, whose
// counting is nearly free: what is left is the Accountant's own bookkeeping.
func BenchmarkAccountantStepEstimate(b *testing.B) { benchmarkSteps(b, Estimator{}) }

func benchmarkSteps(b *testing.B, c Counter) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprint("messages=", n), func(b *testing.B) {
			b.ReportAllocs()
			s := newStepRun(c, n)
			b.ResetTimer()
			for range b.N {
				if s.i == roundSteps {
					b.StopTimer()
					s.reset()
					b.StartTimer()
				}
				s.step()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/step")
		})
	}
}

// BenchmarkCountFromScratch is the cost Accountant avoids: counting the
// whole transcript at every step.
func BenchmarkCountFromScratch(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprint("messages=", n), func(b *testing.B) {
			b.ReportAllocs()
			s := newStepRun(O200k(), n)
			c := O200k()
			b.ResetTimer()
			for range b.N {
				scratch(c, s.transcript[:n])
			}
		})
	}
}

// TestAccountantStepAllocs holds the allocation side of the benchmark: a
// step over a 1000-message transcript allocates no more than 1.5 times a
// step over a 100-message one (allocation counts, unlike times, are
// deterministic).
func TestAccountantStepAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("tokenizes a 1000-message transcript")
	}
	allocs := func(n int) float64 {
		s := newStepRun(O200k(), n)
		return testing.AllocsPerRun(roundSteps-1, func() { s.step() })
	}
	small, large := allocs(100), allocs(1000)
	t.Logf("allocs/step: messages=100: %v, messages=1000: %v", small, large)
	assert.False(t, small == 0 || large > 1.5*small, "allocs/step: messages=1000: %v, want at most 1.5 × messages=100 (%v)", large, small)
}

// TestAccountantStepWork checks the other side of the benchmark: in steady
// state a step hashes only its two new messages and compares a bounded
// number of remembered ones, whatever the transcript's length.
func TestAccountantStepWork(t *testing.T) {
	type work struct{ Hashed, ComparedAtMost uint64 }
	for _, n := range []int{100, 1000} {
		s := newStepRun(Estimator{}, n)
		for range 10 { // past the warm-up of a round
			s.step()
		}
		h, c := s.a.hashed, s.a.compared
		const steps = 30
		for range steps {
			s.step()
		}
		got := work{(s.a.hashed - h) / steps, 0}
		if per := (s.a.compared - c) / steps; per <= 2*2*history {
			got.ComparedAtMost = 2 * 2 * history
		} else {
			got.ComparedAtMost = per
		}
		assert.Empty(t, cmp.Diff(work{2, 2 * 2 * history}, got), "messages=%d: work per step mismatch (-want +got)", n)
	}
}
