package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/session/postgres"
	"github.com/reprompt/reprompt/session/sessiontest"
)

// BenchmarkSave measures one Save that adds 2 messages to a transcript of
// the given length; its cost must not grow with the length.
func BenchmarkSave(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			ctx := context.Background()
			st, err := postgres.New(ctx, newPool(b))
			if err != nil {
				b.Fatal(err)
			}
			const refresh = 32
			sessions := 0
			var cp *session.Checkpoint
			fresh := func() {
				sessions++
				cp = sessiontest.Fixture(fmt.Sprintf("bench-%d", sessions), n)
				cp.Pending = nil
				cp.Transcript = slices.Grow(cp.Transcript, 2*refresh+2)
				if err := st.Save(ctx, cp); err != nil {
					b.Fatal(err)
				}
			}
			fresh()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if i > 0 && i%refresh == 0 {
					b.StopTimer()
					fresh()
					b.StartTimer()
				}
				i++
				cp.Step++
				cp.Transcript = append(cp.Transcript, sessiontest.Messages(len(cp.Transcript), 2)...)
				if err := st.Save(ctx, cp); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
