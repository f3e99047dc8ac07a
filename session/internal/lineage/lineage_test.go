package lineage

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
)

// TestResolve resolves the lineages of a session whose generation 2 was
// written from a base over generation 1, with a hole in generation 0, in
// the order LoadSteps asks for them and out of it.
func TestResolve(t *testing.T) {
	rows := [][2]int{ // generation, index
		{0, 0}, {0, 1}, {0, 3},
		{1, 0}, {1, 1}, {1, 2},
		{2, 2}, {2, 3}, {2, -1},
	}
	rs := New(len(rows), func(i int) (int, int) { return rows[i][0], rows[i][1] })
	for _, tt := range []struct {
		name             string
		root, gen, count int
		want             Lineage
	}{
		{"generation 0: a hole at 2", 0, 0, 10, Lineage{Gens: []int{0, 0}, After: 3}},
		{"generation 1 from root 1", 1, 1, 10, Lineage{Gens: []int{1, 1, 1}, After: -1}},
		{"generation 2 over root 1", 1, 2, 10, Lineage{Gens: []int{1, 1, 2, 2}, After: -1, Negative: true}},
		{"cut to the count asked for", 1, 2, 3, Lineage{Gens: []int{1, 1, 2}, After: -1, Negative: true}},
		{"an earlier generation again", 1, 1, 2, Lineage{Gens: []int{1, 1}, After: -1}},
		{"generation 1 over root 0 fills the hole", 0, 1, 10, Lineage{Gens: []int{1, 1, 1, 0}, After: -1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Empty(t, cmp.Diff(tt.want, rs.Resolve(tt.root, tt.gen, tt.count)), "Resolve(%d, %d, %d) (-want +got)", tt.root, tt.gen, tt.count)
		})
	}
}
