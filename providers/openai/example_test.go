package openai_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/providers/openai"
)

// Against a local Ollama: the same code runs against OpenAI, vLLM or a
// llama.cpp server by changing the environment.
//
//	OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=qwen3:4b go run .
func Example_ollama() {
	m := openai.FromEnv() // or openai.New(openai.Config{BaseURL: "http://localhost:11434/v1", Model: "qwen3:4b"})
	reply, err := m.Stream(context.Background(), &llm.Request{
		System:   "You answer in one word.",
		Messages: []defs.Message{defs.UserMessage("Capital of France?")},
	}, func(d llm.Delta) { fmt.Print(d.Content) })
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	fmt.Printf("\n%d tokens in, %d out\n", reply.Usage.InputTokens, reply.Usage.OutputTokens)
}

func ExampleNew() {
	// A stand-in for an OpenAI-compatible server.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c1","object":"chat.completion","created":1,"model":"llama3.2",
			"choices":[{"index":0,"message":{"role":"assistant","content":"Paris."},"finish_reason":"stop"}],
			"usage":{"prompt_tokens":20,"completion_tokens":2,"total_tokens":22}}`)
	}))
	defer srv.Close()

	m := openai.New(openai.Config{BaseURL: srv.URL + "/v1", Model: "llama3.2"})
	reply, err := m.Generate(context.Background(), &llm.Request{
		System:   "You answer in one word.",
		Messages: []defs.Message{defs.UserMessage("Capital of France?")},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(reply.Message.Content, reply.FinishReason, reply.Usage.Total())
	// Output: Paris. stop 22
}
