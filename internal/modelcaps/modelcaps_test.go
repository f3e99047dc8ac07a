package modelcaps

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestStructuredOutput(t *testing.T) {
	tests := map[string]bool{
		"gpt-4o":                  true,
		"gpt-4o-2024-08-06":       true,
		"gpt-4o-mini":             true,
		"openai/GPT-4.1-nano":     true,
		"gpt-5-mini":              true,
		"o1":                      true,
		"o1-2024-12-17":           true,
		"o3-mini":                 true,
		"o4-mini-2025-04-16":      true,
		"gpt-4o-2024-05-13":       false,
		"o1-preview":              false,
		"o1-mini":                 false,
		"gpt-4-turbo":             false,
		"gpt-3.5-turbo":           false,
		"chatgpt-4o-latest":       false,
		"ollama/llama3.1:8b":      false,
		"qwen3:4b":                false,
		"":                        false,
		"some-model-we-never-saw": false,
	}
	for model, want := range tests {
		got := StructuredOutput(model)
		assert.Equal(t, want, got, "StructuredOutput(%q) = %t, want %t", model, got, want)
	}
}
