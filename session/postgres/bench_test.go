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

// BenchmarkSaveRewrite measures one Save that commits a new generation, as
// the runtime's context effects do at almost every step: the last 3
// messages of a transcript of the given length rewritten and 2 added. With
// base=tail (Checkpoint.Base set to the unchanged prefix) its cost must not
// grow with the length, as BenchmarkSave's; base=0 rewrites the whole
// transcript, as every new generation did before Base. rows/save is the
// number of message rows each Save stores.
func BenchmarkSaveRewrite(b *testing.B) {
	for _, n := range []int{100, 1000} {
		for _, tail := range []bool{true, false} {
			name := fmt.Sprintf("messages=%d/base=tail", n)
			if !tail {
				name = fmt.Sprintf("messages=%d/base=0", n)
			}
			b.Run(name, func(b *testing.B) {
				ctx := context.Background()
				st, err := postgres.New(ctx, newPool(b))
				if err != nil {
					b.Fatal(err)
				}
				const refresh = 32
				sessions, saves := 0, 0
				var cp *session.Checkpoint
				fresh := func() {
					sessions++
					cp = sessiontest.Fixture(fmt.Sprintf("bench-%d", sessions), n)
					cp.Pending = nil
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
					prev := len(cp.Transcript)
					// In place: a Store does not keep the checkpoint.
					for j := prev - 3; j < prev; j++ {
						cp.Transcript[j].Content = fmt.Sprintf("rewritten at save %d", i)
					}
					cp.Transcript = append(cp.Transcript, sessiontest.Messages(prev, 2)...)
					cp.Step++
					cp.Generation++
					cp.Base = 0
					if tail {
						cp.Base = prev - 3
					}
					if err := st.Save(ctx, cp); err != nil {
						b.Fatal(err)
					}
					saves++
				}
				b.StopTimer()
				rows := 0
				for s := 1; s <= sessions; s++ {
					r, err := st.Rows(ctx, fmt.Sprintf("bench-%d", s))
					if err != nil {
						b.Fatal(err)
					}
					rows += r - n // the rows of the fresh session's first save
				}
				b.ReportMetric(float64(rows)/float64(saves), "rows/save")
			})
		}
	}
}
