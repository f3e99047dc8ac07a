package state_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/state"
)

func TestSetJSONInTransaction(t *testing.T) {
	s := state.New()
	state.Set(bg, s, "n", 1)
	before, err := s.MarshalJSON()
	require.NoError(t, err)

	tx := s.Begin()
	ctx := state.ContextWithTx(bg, tx)
	require.NoError(t, state.SetJSON(ctx, s, "n", json.RawMessage(`5`)))
	require.Error(t, state.SetJSON(ctx, s, "bad", json.RawMessage(`{`)), "invalid JSON")
	n, err := state.Get[int](bg, s, "n")
	require.NoError(t, err)
	require.Equal(t, 1, n, "before Commit")

	require.NoError(t, tx.Commit())
	n, err = state.Get[int](bg, s, "n")
	require.NoError(t, err)
	require.Equal(t, 5, n, "after Commit")

	state.Set(bg, s, "s", "x")
	ch, err := s.Changes(before)
	require.NoError(t, err)
	require.Equal(t, map[string]json.RawMessage{"n": json.RawMessage(`5`), "s": json.RawMessage(`"x"`)}, ch)
}
