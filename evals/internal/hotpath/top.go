package hotpath

import (
	"container/heap"
	"math"
	"slices"
)

// P95Rank returns the nearest rank of the 95th percentile of n values,
// from the smallest (1-based).
func P95Rank(n int) int { return max(int(math.Ceil(0.95*float64(n))), 1) }

// Exact returns the mean and the 95th percentile of xs, which it sorts.
// The percentile is the nearest-rank one: the smallest value at least 95 %
// of the values are less than or equal to. Both are 0 for no values.
func Exact(xs []float64) (mean, p95 float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	slices.Sort(xs)
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs)), xs[P95Rank(len(xs))-1]
}

// Top gathers the mean and 95th percentile of up to n values in memory
// that does not grow with them: their sum, for the mean, and the largest
// of them that can be the 95th percentile of n values or fewer (the
// nearest rank from the top, n − rank + 1, is about 5 % of n), in a
// min-heap. The percentile is the nearest-rank one of all the values; the
// mean is the sum in the order the values came: exact for whole numbers
// (steps, tokens), within a rounding of the last bit for a float (cost,
// latency) against a sum in another order.
type Top struct {
	sum float64
	n   int
	top minHeap // at most cap(top) of the largest values
}

// NewTop returns a Top for up to n values.
func NewTop(n int) *Top {
	m := 1
	for i := 1; i <= n; i++ { // the most values from the top any count up to n needs
		m = max(m, i-P95Rank(i)+1)
	}
	return &Top{top: make(minHeap, 0, m)}
}

// Add adds the value x.
func (t *Top) Add(x float64) {
	t.sum += x
	t.n++
	switch {
	case len(t.top) < cap(t.top):
		heap.Push(&t.top, x)
	case x > t.top[0]:
		t.top[0] = x
		heap.Fix(&t.top, 0)
	}
}

// Stat returns the mean and the 95th percentile of the values added, 0
// and 0 when there is none.
func (t *Top) Stat() (mean, p95 float64) {
	if t.n == 0 {
		return 0, 0
	}
	top := slices.Clone(t.top)
	slices.Sort(top)
	j := t.n - P95Rank(t.n) + 1 // from the top
	return t.sum / float64(t.n), top[len(top)-j]
}

// Cap returns how many values t keeps at most.
func (t *Top) Cap() int { return cap(t.top) }

// minHeap is a container/heap of float64, smallest first.
type minHeap []float64

func (h minHeap) Len() int           { return len(h) }
func (h minHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h minHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *minHeap) Push(x any)        { *h = append(*h, x.(float64)) }
func (h *minHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
