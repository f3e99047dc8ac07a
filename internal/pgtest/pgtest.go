// Package pgtest gives tests the PostgreSQL server of REPROMPT_PG_URL,
// which .ci/postgres.sh starts. Only tests import it.
package pgtest

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
)

// URL returns REPROMPT_PG_URL. Without it, t skips, or fails when
// REPROMPT_PG_REQUIRED is set (as .ci/run sets it, so that a missing server
// fails CI instead of skipping its tests).
func URL(t testing.TB) string {
	t.Helper()
	url := os.Getenv("REPROMPT_PG_URL")
	if url == "" {
		if os.Getenv("REPROMPT_PG_REQUIRED") != "" {
			t.Fatal("REPROMPT_PG_REQUIRED is set but REPROMPT_PG_URL is not: .ci/postgres.sh did not provide a server")
		}
		t.Skip("REPROMPT_PG_URL is not set: no PostgreSQL to test against (source .ci/postgres.sh to start one)")
	}
	return url
}

// Name returns prefix followed by 12 random hex digits: a name (a session
// id, a schema) no other run of the tests on the same server uses.
func Name(prefix string) string {
	b := make([]byte, 6)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}
