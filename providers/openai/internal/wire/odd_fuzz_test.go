package wire

import (
	"encoding/json"
	"testing"

	sdk "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"
)

// FuzzOddChunk feeds arbitrary bytes to what reads a server's chunks and
// bodies beyond go-openai: replyError, flattenContentParts, and the stream
// accumulator. None may panic, and a flattened body must stay JSON.
func FuzzOddChunk(f *testing.F) {
	for _, s := range []string{
		`{"id":"x","choices":[{"index":0,"delta":{"content":[{"type":"thinking","thinking":[{"type":"text","text":"a"}]},{"type":"text","text":"b"}]}}]}`,
		`{"id":"x","choices":[{"index":0,"message":{"tool_calls":[{"id":"c","function":{"name":"f","arguments":{"a":1}}}]}}]}`,
		`{"id":"x","error":{"code":502,"message":"m"},"choices":[{"index":0,"delta":{},"finish_reason":"error"}]}`,
		`{"error":"x"}`, `{"error":null}`, `{"choices":null}`, `[1]`, `"s"`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		_ = replyError(raw, 200)
		flat, ok := flattenContentParts(raw)
		if ok {
			require.True(t, json.Valid(flat), "flattened body is not JSON: %s", flat)
		}
		var chunk sdk.ChatCompletionStreamResponse
		if json.Unmarshal(flat, &chunk) == nil {
			acc := newStreamAcc()
			acc.add(&chunk, flat)
			_ = acc.reply()
		}
	})
}
