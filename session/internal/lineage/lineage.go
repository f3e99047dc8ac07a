// Package lineage resolves the transcript of a lineage from the message
// rows a store keeps, for package session's LoadSteps. A checkpoint's
// transcript is stored as rows, each with an index in the transcript and a
// generation; the message of index i of a checkpoint of generation gen
// whose lineage starts at generation root is the row of index i with the
// highest generation in [root, gen].
//
// Rows resolves many lineages of one session from the rows read once: the
// checkpoints of a session come in the order of their generations, and
// each generation only adds to the rows of the one before it, so the cursor
// of a root applies each generation once. It works on indexes and
// generations only; the caller keeps the messages.
package lineage

import (
	"slices"
	"sort"
)

// Rows holds the indexes of a session's stored rows by generation, and
// the cursors that resolve lineages from them. It is not safe for
// concurrent use.
type Rows struct {
	byGen   map[int][]int // indexes by generation, in order
	gens    []int         // the generations of byGen, in order
	cursors map[int]*cursor
}

// New returns the Rows of n stored rows: row(i) returns the generation and
// the index of row i, for each i from 0 to n-1, in any order.
func New(n int, row func(i int) (gen, index int)) *Rows {
	rs := &Rows{byGen: map[int][]int{}, cursors: map[int]*cursor{}}
	for i := range n {
		g, idx := row(i)
		rs.byGen[g] = append(rs.byGen[g], idx)
	}
	for g, idxs := range rs.byGen {
		slices.Sort(idxs)
		rs.gens = append(rs.gens, g)
	}
	slices.Sort(rs.gens)
	return rs
}

// Lineage is the resolved transcript of a lineage, as its stored rows.
type Lineage struct {
	// Gens[i] is the generation of the row of index i with the highest
	// generation of the lineage, for each index from 0 up to the first
	// missing one or the count asked for. The slice is the caller's.
	Gens []int
	// After is the smallest index stored past a missing one, or -1 if
	// none (or if Gens stops at the count asked for).
	After int
	// Negative reports a row of a negative index: a damaged store.
	Negative bool
}

// Resolve returns the rows of lineage (root, gen) up to count rows: each
// index from the highest generation in [root, gen] that stores it. It is
// fastest when the lineages of a root are resolved in the order of their
// generations.
func (rs *Rows) Resolve(root, gen, count int) Lineage {
	c := rs.cursors[root]
	if c == nil || c.gen > gen { // the first, or an earlier generation: start over
		c = &cursor{next: sort.SearchInts(rs.gens, root), gen: root - 1}
		rs.cursors[root] = c
	}
	for ; c.next < len(rs.gens) && rs.gens[c.next] <= gen; c.next++ {
		c.apply(rs.gens[c.next], rs.byGen[rs.gens[c.next]])
	}
	c.gen = gen
	n := min(len(c.gens), count)
	l := Lineage{Gens: slices.Clone(c.gens[:n]), After: -1, Negative: c.negative}
	if n == len(c.gens) {
		for i := range c.later {
			if l.After < 0 || i < l.After {
				l.After = i
			}
		}
	}
	return l
}

// cursor resolves the rows of the lineages of one root, one generation
// after the other.
type cursor struct {
	next int // the index in Rows.gens of the next generation to apply
	gen  int // the generation applied last
	// gens[i] is the generation of the row of index i of the highest
	// generation applied: every index from 0 up to the first missing one.
	// later holds the rows past it, by index.
	gens     []int
	later    map[int]int // index → generation
	negative bool        // a row of a negative index: a damaged store
}

// apply adds the rows of generation gen, their indexes in order, to c.
func (c *cursor) apply(gen int, idxs []int) {
	for _, i := range idxs {
		switch {
		case i < 0:
			c.negative = true
		case i < len(c.gens):
			c.gens[i] = gen
		case i == len(c.gens):
			c.gens = append(c.gens, gen)
			delete(c.later, i) // an earlier generation's
		default:
			if c.later == nil {
				c.later = map[int]int{}
			}
			c.later[i] = gen
		}
	}
	for {
		g, ok := c.later[len(c.gens)]
		if !ok {
			return
		}
		delete(c.later, len(c.gens))
		c.gens = append(c.gens, g)
	}
}
