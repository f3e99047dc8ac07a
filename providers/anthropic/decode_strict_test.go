package anthropic_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDecodeStrictFails shows that the server's check can fail: a
// misspelled field, a field at the wrong place, a wrong "stream".
func TestDecodeStrictFails(t *testing.T) {
	good := `{"max_tokens":10,"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`
	_, err := decodeStrict([]byte(good))
	require.NoError(t, err, "a valid body")
	for name, body := range map[string]string{
		"misspelled top-level field": `{"max_tokens":10,"model":"m","temprature":0.5,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`,
		"unknown block field":        `{"max_tokens":10,"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi","cache":true}]}]}`,
		"stream false":               `{"max_tokens":10,"model":"m","stream":false,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := decodeStrict([]byte(body))
			assert.Error(t, err, "decodeStrict(%s)", body)
		})
	}
}
