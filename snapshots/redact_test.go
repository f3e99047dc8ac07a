package snapshots_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/snapshots"
)

// keyModel is a scripted model that holds a key, as an adapter does.
type keyModel struct{ *snapshots.Model }

func (keyModel) Redact(s string) string { return strings.ReplaceAll(s, "sk-1", "[redacted]") }

// TestRecorderRedacts checks that a Recorder redacts as the model it
// wraps does, so that wrapping a model to record it does not put its key
// back into traces and logs (issue 23 item 8).
func TestRecorderRedacts(t *testing.T) {
	var r llm.Model = snapshots.Record(keyModel{snapshots.Script()})
	rd, ok := r.(llm.Redactor)
	if assert.True(t, ok, "a Recorder implements llm.Redactor") {
		assert.Equal(t, "key [redacted]", rd.Redact("key sk-1"), "Redact through the Recorder")
	}
	plain := snapshots.Record(snapshots.Script())
	assert.Equal(t, "key sk-1", plain.Redact("key sk-1"), "a model without secrets: unchanged")
}
