package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/session/sessiontest"
	"github.com/reprompt/reprompt/session/sqlite"
	"github.com/stretchr/testify/require"
)

func newBenchStore(b *testing.B) session.Store {
	st, err := sqlite.Open(filepath.Join(b.TempDir(), "bench.db"))
	require.NoError(b, err)
	b.Cleanup(func() { st.Close() })
	return st
}

// BenchmarkSave: the cost of a save must not grow with the transcript;
// compare messages=100 with messages=1000.
func BenchmarkSave(b *testing.B) { sessiontest.BenchmarkSave(b, newBenchStore) }

// BenchmarkSaveRewrite: a new generation with a Base costs what a plain
// save does; base=0 shows the cost of rewriting the whole transcript.
func BenchmarkSaveRewrite(b *testing.B) { sessiontest.BenchmarkSaveRewrite(b, newBenchStore) }
