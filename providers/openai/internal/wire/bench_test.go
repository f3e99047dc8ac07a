package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	sdk "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"
)

// loadChunks reads the data payloads of a recorded stream.
func loadChunks(tb testing.TB, file string) [][]byte {
	tb.Helper()
	// The adapter's recorded streams.
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", file))
	require.NoError(tb, err)
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		if ok && string(line) != "[DONE]" {
			out = append(out, bytes.Clone(line))
		}
	}
	return out
}

// BenchmarkStreamAssembly measures decoding and assembling the chunks of a
// recorded stream, the per-chunk work Stream does besides reading.
func BenchmarkStreamAssembly(b *testing.B) {
	for _, file := range []string{"stream_text.sse", "stream_parallel_tools.sse", "stream_ollama_reasoning.sse"} {
		chunks := loadChunks(b, file)
		b.Run(file, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				acc := newStreamAcc()
				for _, raw := range chunks {
					var chunk sdk.ChatCompletionStreamResponse
					require.NoError(b, json.Unmarshal(raw, &chunk))
					acc.add(&chunk, raw)
				}
				acc.reply()
			}
			b.ReportMetric(float64(len(chunks)), "chunks/op")
		})
	}
}
