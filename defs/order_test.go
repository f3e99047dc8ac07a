package defs_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
)

// TestDeclareAnyOrder declares, over many executions, random sequences of
// names (new ones, dropped ones, reordered ones, the same name under two
// kinds) and checks the registry against a model of it: definitions keep
// the position of their first declaration, replaced values are the last
// declared, and undeclared ones are removed at Reconcile.
func TestDeclareAnyOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	r := defs.NewRegistry()
	var order []string // the model: "kind:name" in position order
	values := map[string]string{}
	for exec := range 300 {
		r.BeginExecution()
		n := rng.IntN(8)
		var declared []string
		for range n {
			kind := []defs.Kind{defs.KindVariable, defs.KindSystem}[rng.IntN(2)]
			name := fmt.Sprintf("n%d", rng.IntN(6))
			ref := defs.Ref{Kind: kind, Name: name}.String()
			if slices.Contains(declared, ref) {
				continue
			}
			if rng.IntN(3) > 0 && len(order) > 0 { // mostly the old order
				ref = order[rng.IntN(len(order))]
				if slices.Contains(declared, ref) {
					continue
				}
			}
			var k defs.Kind
			if ref[0] == 'v' {
				k = defs.KindVariable
			} else {
				k = defs.KindSystem
			}
			name = ref[len(k.String())+1:]
			text := fmt.Sprintf("%s@%d", ref, exec)
			r.Declare(defs.Def{Kind: k, Name: name, Text: text})
			declared = append(declared, ref)
			values[ref] = text
			if !slices.Contains(order, ref) {
				order = append(order, ref)
			}
		}
		r.Reconcile()
		order = slices.DeleteFunc(order, func(ref string) bool { return !slices.Contains(declared, ref) })
		var got []string
		for _, k := range []defs.Kind{defs.KindVariable, defs.KindSystem} {
			for d := range r.Collection(k).All() {
				ref := defs.Ref{Kind: d.Kind, Name: d.Name}.String()
				got = append(got, ref)
				require.Equal(t, values[ref], d.Text, "execution %d: %s holds %q, want %q", exec, ref, d.Text, values[ref])
				l, ok := r.Lookup(d.Kind, d.Name)
				require.True(t, ok, "execution %d: Lookup(%s) = %q, %v", exec, ref, l.Text, ok)
				require.Equal(t, d.Text, l.Text, "execution %d: Lookup(%s) = %q, %v", exec, ref, l.Text, ok)
			}
		}
		var want []string
		for _, k := range []string{"variable:", "system:"} {
			for _, ref := range order {
				if len(ref) > len(k) && ref[:len(k)] == k {
					want = append(want, ref)
				}
			}
		}
		require.Empty(t, cmp.Diff(want, got), "execution %d (declared %v): definitions (-want +got)", exec, declared)
	}
}

// Enabled skips the definitions disabled before the iteration reaches
// them, also by the loop body.
func TestEnabledSeesDisablesMadeDuringIteration(t *testing.T) {
	r := defs.NewRegistry()
	for _, n := range []string{"a", "b", "c", "d"} {
		r.Declare(variable(n, n))
	}
	r.Declare(tool("t"))
	r.Disable(defs.KindVariable, "a")
	var got []string
	for d := range r.Collection(defs.KindVariable).Enabled() {
		got = append(got, d.Name)
		if d.Name == "b" {
			r.Disable(defs.KindVariable, "c")
		}
	}
	assert.Empty(t, cmp.Diff([]string{"b", "d"}, got), "Enabled (-want +got)")
}
