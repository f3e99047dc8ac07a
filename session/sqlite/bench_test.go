package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/session/sessiontest"
	"github.com/reprompt/reprompt/session/sqlite"
)

// BenchmarkSave measures one Save that adds 2 messages to a transcript of
// the given length. Its cost must not grow with the length: compare
// messages=100 with messages=1000.
func BenchmarkSave(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			ctx := context.Background()
			st, err := sqlite.Open(filepath.Join(b.TempDir(), "bench.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			// A session is refreshed every refresh saves so that the
			// transcript stays within n..n+2*refresh messages.
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
