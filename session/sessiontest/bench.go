package sessiontest

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/session"
)

// refresh is how many saves a benchmark makes in one session before it
// starts another, so that transcripts stay near the length measured.
const refresh = 32

// benchSession saves the first checkpoint of a new session of n messages
// and returns it, ready for further saves.
func benchSession(b *testing.B, st session.Store, id string, n, room int) *session.Checkpoint {
	cp := Fixture(id, n)
	cp.Pending = nil
	cp.Transcript = slices.Grow(cp.Transcript, room)
	require.NoError(b, st.Save(context.Background(), cp))
	return cp
}

// BenchmarkSave measures one Save that adds 2 messages to a transcript of
// messages=100 or messages=1000; its cost must not grow with the length.
// newStore returns an empty store for each sub-benchmark.
func BenchmarkSave(b *testing.B, newStore func(b *testing.B) session.Store) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			ctx := context.Background()
			st := newStore(b)
			sessions := 1
			cp := benchSession(b, st, "bench-1", n, 2*refresh+2)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if i > 0 && i%refresh == 0 {
					b.StopTimer()
					sessions++
					cp = benchSession(b, st, fmt.Sprintf("bench-%d", sessions), n, 2*refresh+2)
					b.StartTimer()
				}
				cp.Step++
				cp.Transcript = append(cp.Transcript, Messages(len(cp.Transcript), 2)...)
				require.NoError(b, st.Save(ctx, cp))
			}
		})
	}
}

// BenchmarkSaveRewrite measures one Save that commits a new generation, as
// the runtime's context effects do at almost every step: the last 3
// messages of a transcript of messages=100 or 1000 rewritten and 2 added.
// With base=tail (Checkpoint.Base set to the unchanged prefix) its cost must
// not grow with the length; base=0 rewrites the whole transcript. When the
// store is a RowCounter it reports rows/save, the message rows each Save
// stores.
func BenchmarkSaveRewrite(b *testing.B, newStore func(b *testing.B) session.Store) {
	for _, n := range []int{100, 1000} {
		for _, tail := range []bool{true, false} {
			name := fmt.Sprintf("messages=%d/base=tail", n)
			if !tail {
				name = fmt.Sprintf("messages=%d/base=0", n)
			}
			b.Run(name, func(b *testing.B) {
				ctx := context.Background()
				st := newStore(b)
				sessions, saves := 1, 0
				cp := benchSession(b, st, "bench-1", n, 0)
				b.ReportAllocs()
				for i := 1; b.Loop(); i++ {
					if i > 1 && (i-1)%refresh == 0 {
						b.StopTimer()
						sessions++
						cp = benchSession(b, st, fmt.Sprintf("bench-%d", sessions), n, 0)
						b.StartTimer()
					}
					prev := len(cp.Transcript)
					// In place: a Store does not keep the checkpoint.
					for j := prev - 3; j < prev; j++ {
						cp.Transcript[j].Content = fmt.Sprintf("rewritten at save %d", i)
					}
					cp.Transcript = append(cp.Transcript, Messages(prev, 2)...)
					cp.Step++
					cp.Generation++
					cp.Base = 0
					if tail {
						cp.Base = prev - 3
					}
					require.NoError(b, st.Save(ctx, cp))
					saves++
				}
				b.StopTimer()
				rc, ok := st.(RowCounter)
				if !ok || saves == 0 {
					return
				}
				rows := 0
				for s := 1; s <= sessions; s++ {
					r, err := rc.Rows(ctx, fmt.Sprintf("bench-%d", s))
					require.NoError(b, err)
					rows += r - n // the rows of the session's first save
				}
				b.ReportMetric(float64(rows)/float64(saves), "rows/save")
			})
		}
	}
}
