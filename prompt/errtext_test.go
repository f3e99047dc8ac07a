package prompt_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/reprompt/reprompt/prompt"
)

// TestErrorTexts is the contract of the errors' text, which the other tests
// leave to fields: each error prints every field a reader needs.
func TestErrorTexts(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want []string // parts the text contains
	}{
		{"returned", &prompt.Error{Step: 2, Err: errors.New("no input")},
			[]string{"step 2", "no input"}},
		{"panicked", &prompt.Error{Step: 3, Site: "agent.go:7", Panicked: true, Err: errors.New("kaput")},
			[]string{"panicked", "agent.go:7", "step 3", "kaput"}},
		{"misuse", &prompt.MisuseError{Hook: "State", Site: "agent.go:8", Err: errors.New("wrong type")},
			[]string{"State", "agent.go:8", "wrong type"}},
		{"arguments", &prompt.ArgumentsError{Tool: "search", Err: errors.New("missing properties: query")},
			[]string{`tool "search"`, "missing properties: query"}},
		{"tool name", &prompt.ToolNameError{Name: "web search"},
			[]string{`"web search"`, "^[a-zA-Z0-9_-]{1,64}$"}},
		{"duplicate tool", &prompt.DuplicateToolError{Name: "search", First: "agent.go:3", Now: "agent.go:4"},
			[]string{`"search"`, "agent.go:3", "agent.go:4"}},
		{"approval type", &prompt.ApprovalTypeError{Args: reflect.TypeFor[struct{ N int }](), Option: reflect.TypeFor[int]()},
			[]string{"func(int) bool", "struct { N int }"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, w := range tt.want {
				assert.Contains(t, tt.err.Error(), w, "error text")
			}
		})
	}
}
