// Command quickstart runs a small to-do agent offline, on a scripted model,
// and prints what happens at each step: the tools the model called, the
// effects that ran and why, what was disabled or reminded, and how the
// state changed.
//
//	go run ./examples/quickstart
//
// Built with -tags live, it runs the same agent on a real model when
// OPENAI_API_KEY or OPENAI_BASE_URL is set (see examples/internal/models):
//
//	OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=qwen3:4b go run -tags live ./examples/quickstart
//
// The agent, its script and the printout are in examples/internal/agents;
// examples/internal/anthropic, a module of its own (the root module does
// not require the Anthropic adapter), runs them on Anthropic's API when
// ANTHROPIC_API_KEY is set.
//
// The default build links no network code (no net/http, no TLS), so a first
// run on an empty build cache compiles only what the offline run needs.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/reprompt/reprompt/examples/internal/agents"
)

func main() {
	cfg, flush, err := observe(os.Args[1:], os.Stderr) // -trace, -log: see observe.go
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer flush()
	model, about := pickModel(agents.TodoScript())
	if err := agents.RunTodo(context.Background(), os.Stdout, model, about, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "run failed:", err)
		flush()
		os.Exit(1)
	}
}
