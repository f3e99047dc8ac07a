package session_test

import (
	"errors"
	"testing"

	"github.com/reprompt/reprompt/session"
	"github.com/stretchr/testify/assert"
)

// TestErrorTexts is the contract of the errors' text, which the other tests
// leave to fields: each error prints every field a reader needs.
func TestErrorTexts(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want []string // parts the text contains
	}{
		{"version", &session.VersionError{ID: "s", Seq: 4, Got: 9, Max: 2},
			[]string{`"s"`, "checkpoint 4", "version 9", "newer", "(2)"}},
		{"corrupt", &session.CorruptError{ID: "s", Seq: 4, Err: errors.New("bad head")},
			[]string{`"s"`, "checkpoint 4", "corrupt", "bad head"}},
		{"conflict", &session.ConflictError{ID: "s", Seq: 3, Latest: 5},
			[]string{`"s"`, "seq 3", "latest is 5"}},
		{"not found at a step", &session.NotFoundError{ID: "s", Step: 6, AtStep: true},
			[]string{`"s"`, "step 6"}},
		{"invalid", &session.InvalidError{ID: "s", Reason: "empty session id"},
			[]string{`"s"`, "empty session id"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, w := range tt.want {
				assert.Contains(t, tt.err.Error(), w, "%q does not contain %q", tt.err, w)
			}
		})
	}
}
