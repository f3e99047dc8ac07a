package runtime_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/reprompt/reprompt/runtime"
)

// TestErrorTexts is the contract of the errors' text, which the other tests
// leave to fields: each error prints every field a reader needs.
func TestErrorTexts(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want []string // parts the text contains
	}{
		{"step", &runtime.StepError{Step: 3, Op: runtime.OpRender, Err: errors.New(`variable "x" cannot be rendered`)},
			[]string{"step 3", "render", `variable "x" cannot be rendered`}},
		{"panic", &runtime.PanicError{Step: 2, Site: "agent.go:9", Value: "kaput"},
			[]string{"step 2", "agent.go:9", "kaput"}},
		{"tool panic", &runtime.ToolPanicError{Tool: "boom", Site: "tools.go:5", Value: "kaput"},
			[]string{`"boom"`, "tools.go:5", "kaput"}},
		{"tool timeout", &runtime.ToolTimeoutError{Tool: "stuck", Timeout: "30s"},
			[]string{`"stuck"`, "30s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, w := range tt.want {
				assert.Contains(t, tt.err.Error(), w, "error text")
			}
		})
	}
}
