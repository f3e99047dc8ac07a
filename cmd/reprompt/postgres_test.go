package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/internal/pgtest"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session/postgres"
	"github.com/reprompt/reprompt/snapshots"
)

// TestPostgresStore reads a session from the PostgreSQL server of
// REPROMPT_PG_URL (.ci/postgres.sh): listed, shown, rewound.
func TestPostgresStore(t *testing.T) {
	url := pgtest.URL(t)
	st, err := postgres.Open(t.Context(), url)
	require.NoError(t, err)
	defer st.Close()
	id := pgtest.Name("cmd-reprompt-")
	t.Cleanup(func() { _ = st.Delete(t.Context(), id) })
	model := snapshots.Script(snapshots.CallTool("add", nil), snapshots.Text("One."))
	_, err = runtime.Run(t.Context(), model, agent, runtime.Config{Store: st, SessionID: id})
	require.NoError(t, err)

	code, out, errs := cli(t, "--store", url, "sessions")
	require.Equal(t, 0, code, errs)
	assert.Regexp(t, `(?m)^`+id+`\s+2\s+\S+ \S+\s+done$`, out)
	code, out, errs = cli(t, "--store", url, "show", id)
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "effect #0 before-call main_test.go:36: first run")
	assert.Contains(t, out, "reply (stop): One.")
	code, _, errs = cli(t, "--store", url, "rewind", id, "--to", "1")
	require.Equal(t, 0, code, errs)
	info, err := st.Stat(t.Context(), id)
	require.NoError(t, err)
	assert.Equal(t, 1, info.Step)
}
