package session_test

import (
	"testing"

	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/session/sessiontest"
)

func newMemory(*testing.B) session.Store { return session.NewMemory() }

func BenchmarkSave(b *testing.B)        { sessiontest.BenchmarkSave(b, newMemory) }
func BenchmarkSaveRewrite(b *testing.B) { sessiontest.BenchmarkSaveRewrite(b, newMemory) }
