package effects_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/reprompt/reprompt/effects"
)

// TestErrorTexts is the contract of the errors' text, which the other tests
// leave to fields: each error prints every field a reader needs to find the
// cause (the effect, the call sites, the step, the cause) and, where there
// is one, the fix.
func TestErrorTexts(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want []string // parts the text contains
	}{
		{"effect failed", &effects.Error{ID: "#1", Site: "agent.go:12", Step: 7, Err: errors.New("boom")},
			[]string{"#1", "agent.go:12", "step 7", "boom"}},
		{"effect panicked", &effects.Error{ID: "key:p", Site: "agent.go:12", Step: 3, PanicSite: "agent.go:14", Err: errors.New("panic: kaput")},
			[]string{"key:p", "agent.go:12", "panicked at agent.go:14", "step 3", "kaput"}},
		{"cleanup panicked", &effects.Error{ID: "key:w", Site: "agent.go:12", Step: 2, PanicSite: "agent.go:20", Cleanup: true, Err: errors.New("panic: broke")},
			[]string{"cleanup", "key:w", "agent.go:12", "agent.go:20", "step 2", "broke"}},
		{"order changed", &effects.HookOrderError{Index: 2, Was: "agent.go:12", Now: "agent.go:15"},
			[]string{"#2", "agent.go:12", "agent.go:15", "effects.Key"}},
		{"loop changed length", &effects.HookOrderError{Was: "agent.go:12", Now: "agent.go:12", Count: 1, PrevCount: 2},
			[]string{"agent.go:12", "registered 1 unkeyed effects, but 2 on the previous execution", "effects.Key"}},
		{"duplicate key", &effects.DuplicateKeyError{Key: "k", First: "agent.go:12", Now: "agent.go:15"},
			[]string{`"k"`, "agent.go:12", "agent.go:15"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, w := range tt.want {
				assert.Contains(t, tt.err.Error(), w, "error text")
			}
		})
	}
}
