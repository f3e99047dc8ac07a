package viewer_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/cmd/reprompt/internal/viewer"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
)

// update is the JSON of viewer.Update.
type update struct {
	Version      string            `json:"version"`
	Done         bool              `json:"done"`
	Turns        bool              `json:"turns"`
	From         int               `json:"from"`
	Steps        []json.RawMessage `json:"steps"`
	Detail       []json.RawMessage `json:"detail"`
	MessagesFrom int               `json:"messages_from"`
	Messages     []json.RawMessage `json:"messages"`
}

func readUpdate(t *testing.T, run *viewer.Run, from int) update {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, viewer.WriteUpdate(&b, run, from, "v"))
	var u update
	require.NoError(t, json.Unmarshal(b.Bytes(), &u))
	return u
}

// TestUpdateFollows: a page that has a run's steps and applies the update
// of the run read later, from its last step on, holds what a page of the
// later run holds.
func TestUpdateFollows(t *testing.T) {
	ctx := t.Context()
	st := session.NewMemory()
	s := &shop{steer: "Eggs too."}
	s.r = runtime.New(shopScript(), s.fn, runtime.Config{Store: st, SessionID: "shop"})
	var page update // what the page holds
	for i, msg := range []string{"Hello.", "Add milk.", "Order eggs."} {
		_, err := s.r.Continue(ctx, msg)
		require.NoError(t, err, "Continue(%q)", msg)
		run, err := viewer.FromStore(ctx, st, "shop")
		require.NoError(t, err)
		from := max(len(page.Steps)-1, 0)
		u := readUpdate(t, run, from)
		require.LessOrEqual(t, u.MessagesFrom, len(page.Messages), "turn %d: the update needs messages the page lacks", i)
		page.Steps = append(page.Steps[:from], u.Steps...)
		page.Detail = append(page.Detail[:from], u.Detail...)
		page.Messages = append(page.Messages[:u.MessagesFrom], u.Messages...)
		page.Turns, page.Done = u.Turns, u.Done

		full := readUpdate(t, run, 0)
		assert.Equal(t, 0, full.MessagesFrom)
		full.From, full.Version, full.MessagesFrom = 0, "", 0
		page.Version = ""
		assert.Empty(t, cmp.Diff(full, page), "turn %d: the page after the update (-want +got)", i)
	}
	assert.True(t, page.Turns)
	assert.Len(t, page.Steps, 4)
}
