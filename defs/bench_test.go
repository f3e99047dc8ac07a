package defs_test

import (
	"strconv"
	"testing"

	"github.com/reprompt/reprompt/defs"
)

// BenchmarkExecution measures what the registry does for one execution of a
// prompt like scenario S1's: fifteen definitions declared again, reconciled,
// and iterated by kind as a request is rendered.
func BenchmarkExecution(b *testing.B) {
	r := defs.NewRegistry()
	names := make([]string, 15)
	for i := range names {
		names[i] = "def" + strconv.Itoa(i)
	}
	kinds := []defs.Kind{defs.KindSystem, defs.KindVariable, defs.KindTool}
	tool := &defs.Tool{}
	b.ReportAllocs()
	for b.Loop() {
		r.BeginStep()
		r.BeginExecution()
		for i, name := range names {
			d := defs.Def{Kind: kinds[i%3], Name: name, Text: name}
			if d.Kind == defs.KindTool {
				d.Text, d.Tool = "", tool
			}
			r.Declare(d)
		}
		r.Reconcile()
		for _, k := range kinds {
			for range r.Collection(k).Enabled() {
			}
		}
	}
}
