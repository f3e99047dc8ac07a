package tokens

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/reprompt/reprompt/defs"
	"github.com/stretchr/testify/assert"
)

// The counts below were computed once with github.com/tiktoken-go/tokenizer
// v0.10.0; they must not drift.
func TestTextExact(t *testing.T) {
	tests := []struct {
		text          string
		o200k, cl100k int
	}{
		{"", 0, 0},
		{"hello world", 2, 2},
		{"Hello, world!", 4, 4},
		{"The quick brown fox jumps over the lazy dog.", 10, 10},
		{"supercalifragilistic", 6, 7},
		{"こんにちは世界", 2, 4},
		{"🙂🙂🙂", 3, 6},
		{"func main() {\n\tfmt.Println(\"hi\")\n}", 10, 10},
		{"1234567890", 4, 4},
		{"assistant", 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			got := [2]int{O200k().Text(tt.text), Cl100k().Text(tt.text)}
			assert.Empty(t, cmp.Diff([2]int{tt.o200k, tt.cl100k}, got), "[o200k, cl100k] mismatch (-want +got)")
		})
	}
}

func TestEncodingsDiffer(t *testing.T) {
	// Same text, different vocabularies: o200k merges more.
	for _, s := range []string{"supercalifragilistic", "こんにちは世界", "🙂🙂🙂"} {
		o, c := O200k().Text(s), Cl100k().Text(s)
		assert.NotEqual(t, c, o, "Text(%q): o200k and cl100k both give %d; want them to differ", s, o)
	}
}

func TestForModel(t *testing.T) {
	tests := []struct {
		model string
		want  string
		exact bool
	}{
		{"gpt-4o", "o200k_base", true},
		{"gpt-4o-mini", "o200k_base", true},
		{"gpt-4o-2024-08-06", "o200k_base", true},
		{"chatgpt-4o-latest", "o200k_base", true},
		{"gpt-4.1", "o200k_base", true},
		{"gpt-4.1-nano", "o200k_base", true},
		{"gpt-5", "o200k_base", true},
		{"gpt-5-mini", "o200k_base", true},
		{"gpt-5.1", "o200k_base", true},
		{"o1", "o200k_base", true},
		{"o1-preview", "o200k_base", true},
		{"o3-mini", "o200k_base", true},
		{"o4-mini", "o200k_base", true},
		{"gpt-oss-120b", "o200k_base", true},
		{"openai/gpt-4o", "o200k_base", true},
		{"GPT-4O", "o200k_base", true},
		{"ft:gpt-4o-mini:org::abc", "o200k_base", true},
		{"gpt-4", "cl100k_base", true},
		{"gpt-4-turbo", "cl100k_base", true},
		{"gpt-4-0613", "cl100k_base", true},
		{"gpt-3.5-turbo", "cl100k_base", true},
		{"gpt-35-turbo", "cl100k_base", true},
		{"text-embedding-3-small", "cl100k_base", true},
		{"text-embedding-ada-002", "cl100k_base", true},
		{"llama3.1:8b", "estimate", false},
		{"qwen2.5-coder", "estimate", false},
		{"mistral-large", "estimate", false},
		{"claude-sonnet-4", "estimate", false},
		{"o10", "estimate", false},
		{"gpt-4x", "estimate", false},
		{"", "estimate", false},
	}
	type result struct {
		Name  string
		Exact bool
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			c := ForModel(tt.model)
			assert.Empty(t, cmp.Diff(result{tt.want, tt.exact}, result{c.Name(), c.Exact()}), "ForModel(%q) mismatch (-want +got)", tt.model)
		})
	}
}

func TestMessageFraming(t *testing.T) {
	for _, c := range []Counter{O200k(), Cl100k(), Estimator{}} {
		tests := []struct {
			name string
			m    defs.Message
			want int
		}{
			{"user", defs.UserMessage("hello world"), MessageOverhead + c.Text("user") + c.Text("hello world")},
			{"reasoning not counted", defs.Message{Role: defs.RoleAssistant, Content: "ok", Reasoning: "long thoughts", Meta: map[string]string{"k": "v"}},
				MessageOverhead + c.Text("assistant") + c.Text("ok")},
			{"name", defs.Message{Role: defs.RoleUser, Content: "hi", Name: "alice"},
				MessageOverhead + c.Text("user") + c.Text("hi") + NameOverhead + c.Text("alice")},
			{"tool calls", defs.Message{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{
				{ID: "call_1", Name: "read_file", Arguments: json.RawMessage(`{"path":"a.go"}`)},
				{ID: "call_2", Name: "list", Arguments: json.RawMessage(`{}`)},
			}}, MessageOverhead + c.Text("assistant") +
				ToolCallOverhead + c.Text("call_1") + c.Text("read_file") + c.Text(`{"path":"a.go"}`) +
				ToolCallOverhead + c.Text("call_2") + c.Text("list") + c.Text(`{}`)},
			{"tool result", defs.Message{Role: defs.RoleTool, Content: "package a", ToolCallID: "call_1", Name: "read_file"},
				MessageOverhead + c.Text("tool") + c.Text("package a") + c.Text("call_1") + NameOverhead + c.Text("read_file")},
		}
		for _, tt := range tests {
			t.Run(c.Name()+"/"+tt.name, func(t *testing.T) {
				assert.Equal(t, tt.want, c.Message(tt.m), "Message")
			})
		}
	}
	// A fixed value, so that the rules themselves cannot drift unnoticed.
	assert.Equal(t, 8, O200k().Message(defs.UserMessage("Hello, world!")), "o200k Message(user %q)", "Hello, world!")
}

func TestTool(t *testing.T) {
	params := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)
	indented := json.RawMessage("{\n  \"type\": \"object\",\n  \"properties\": {\"path\": {\"type\": \"string\"}},\n  \"required\": [\"path\"]\n}")
	for _, c := range []Counter{O200k(), Cl100k(), Estimator{}} {
		want := ToolOverhead + c.Text("read_file") + c.Text("Read a file.") + c.Text(string(params))
		got := []int{
			c.Tool("read_file", "Read a file.", params),
			c.Tool("read_file", "Read a file.", indented), // compacted first
		}
		assert.Empty(t, cmp.Diff([]int{want, want}, got), "%s: Tool mismatch (-want +got)", c.Name())
		// Invalid JSON is counted as given.
		assert.Equal(t, ToolOverhead+c.Text("x")+c.Text("{oops"), c.Tool("x", "", json.RawMessage("{oops")), "%s: Tool(invalid JSON)", c.Name())
	}
}

func TestEstimator(t *testing.T) {
	tests := []struct {
		e    Estimator
		text string
		want int
	}{
		{Estimator{}, "", 0},
		{Estimator{}, "abcd", 1},
		{Estimator{}, "abcde", 2},
		{Estimator{}, "hello world", 3},
		{Estimator{}, "é", 1},  // 2 bytes
		{Estimator{}, "世界", 4}, // 3 bytes each
		{Estimator{}, "🙂", 2},  // 4 bytes
		{Estimator{CharsPerToken: 2}, "abcd", 2},
		{Estimator{CharsPerToken: -1}, "abcd", 1},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.e.Text(tt.text), "Estimator%+v.Text(%q)", tt.e, tt.text)
	}
}

// An Estimator should not undercount prose under the exact encodings.
func TestEstimatorConservative(t *testing.T) {
	prose := []string{
		"The quick brown fox jumps over the lazy dog.",
		"Compaction summarises older messages into one clearly labelled summary message.",
		"こんにちは世界",
		"Ça va très bien, merci beaucoup.",
	}
	for _, s := range prose {
		e := Estimator{}.Text(s)
		for _, c := range []Counter{O200k(), Cl100k()} {
			n := c.Text(s)
			assert.GreaterOrEqual(t, e, n, "Estimator.Text(%q) = %d, below %s's %d", s, e, c.Name(), n)
		}
	}
}
