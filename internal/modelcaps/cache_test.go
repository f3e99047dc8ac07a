package modelcaps

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTakesCacheRetention(t *testing.T) {
	tests := []struct {
		model     string
		retention string
		want      bool
	}{
		{"gpt-4.1", Retention24h, true},
		{"gpt-4.1-mini-2025-04-14", Retention24h, true},
		{"gpt-5", Retention24h, true},
		{"openai/gpt-5.1-codex", Retention24h, true},
		{"gpt-5.5-pro", Retention24h, true},
		{"gpt-4o", Retention24h, false},
		{"gpt-4o-mini", Retention24h, false},
		{"o3", Retention24h, false},
		{"o4-mini", Retention24h, false},
		{"chatgpt-4o-latest", Retention24h, false},
		{"gpt-4o", RetentionInMemory, true},
		{"gpt-5.1", RetentionInMemory, true},
		{"o3-mini", RetentionInMemory, true},
		{"gpt-5.5", RetentionInMemory, false},
		{"gpt-5.6-mini", RetentionInMemory, false},
		{"gpt-6", RetentionInMemory, false},
		// Not OpenAI's: the setting stands.
		{"qwen3:4b", Retention24h, true},
		{"gpt-oss:20b", Retention24h, true},
		{"", RetentionInMemory, true},
	}
	for _, tt := range tests {
		got := TakesCacheRetention(tt.model, tt.retention)
		assert.Equal(t, tt.want, got, "TakesCacheRetention(%q, %q)", tt.model, tt.retention)
	}
}
