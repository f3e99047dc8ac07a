package postgres_test

import (
	"context"
	"testing"

	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/session/postgres"
	"github.com/reprompt/reprompt/session/sessiontest"
	"github.com/stretchr/testify/require"
)

func newBenchStore(b *testing.B) session.Store {
	st, err := postgres.New(context.Background(), newPool(b))
	require.NoError(b, err)
	return st
}

// BenchmarkSave: the cost of a save must not grow with the transcript.
func BenchmarkSave(b *testing.B) { sessiontest.BenchmarkSave(b, newBenchStore) }

// BenchmarkSaveRewrite: a new generation with a Base costs what a plain
// save does; base=0 shows the cost of rewriting the whole transcript.
func BenchmarkSaveRewrite(b *testing.B) { sessiontest.BenchmarkSaveRewrite(b, newBenchStore) }
