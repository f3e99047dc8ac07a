package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func runOut(t *testing.T, in string, o options) string {
	t.Helper()
	var b strings.Builder
	err := run(context.Background(), &b, strings.NewReader(in), o)
	require.NoError(t, err, "run:\n%s", b.String())
	return b.String()
}

func TestDefaultDecisions(t *testing.T) {
	out := runOut(t, "", options{approve: []string{"call_1"}, deny: []string{"call_3"}, reason: "Not this month."})
	want := `step 0: pay {"to":"gym","amount":30} -> paid 30 to gym
awaiting approval: call_1 pay {"to":"landlord","amount":900}
awaiting approval: call_3 pay {"to":"dealer","amount":400}
approving call_1
denying call_3: Not this month.
step 0 (decided): pay {"to":"landlord","amount":900} -> paid 900 to landlord
step 0 (decided): pay {"to":"gym","amount":30} -> paid 30 to gym
step 0 (decided): pay {"to":"dealer","amount":400} -> Not this month.
Done. paid 900 to landlord; paid 30 to gym; Not this month.
`
	assert.Equal(t, want, out, "output:\n%s\nwant:\n%s", out, want)
}

func TestAsk(t *testing.T) {
	out := runOut(t, "y\nToo expensive.\n", options{ask: true})
	assert.True(t, strings.HasSuffix(out, "Done. paid 900 to landlord; paid 30 to gym; Too expensive.\n"), "output:\n%s", out)
}

func TestStopAndDecideInAnotherRun(t *testing.T) {
	db := filepath.Join(t.TempDir(), "pay.db")
	out := runOut(t, "", options{db: db, stop: true})
	require.Contains(t, out, "awaiting approval: call_3", "first run:\n%s", out)
	require.Contains(t, out, "stopped at the pause", "first run:\n%s", out)
	out = runOut(t, "", options{db: db, approve: []string{"call_1"}})
	require.Contains(t, out, "resumed session", "second run (approves one):\n%s", out)
	require.Contains(t, out, "awaiting approval: call_3", "second run (approves one):\n%s", out)
	require.Contains(t, out, "the run stays paused", "second run (approves one):\n%s", out)
	out = runOut(t, "", options{db: db, approve: []string{"call_3"}})
	require.False(t, strings.Contains(out, "call_1") && strings.Contains(out, "awaiting approval: call_1"), "the approval of the second run was lost:\n%s", out)
	require.True(t, strings.HasSuffix(out, "Done. paid 900 to landlord; paid 30 to gym; paid 400 to dealer\n"), "third run:\n%s", out)
	out = runOut(t, "", options{db: db})
	require.Contains(t, out, "already finished", "fourth run:\n%s", out)
}
