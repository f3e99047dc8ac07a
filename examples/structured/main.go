// Command structured runs an issue-triage agent that ends with a typed
// value instead of text: it reads an issue with a tool, then answers with a
// Triage, whose JSON Schema is made from the Go type. The first answer is
// invalid (a priority that is not a number): the runtime sends the
// validation error back and the model answers again.
//
//	go run ./examples/structured            # the answer as a tool call (any model that calls tools)
//	go run ./examples/structured -native    # the answer as a strict response_format
//
// Built with -tags live, it runs on a real model when OPENAI_API_KEY or
// OPENAI_BASE_URL is set; the model's profile then decides how the answer
// is asked for unless -native or -tool is given.
//
// The agent, its script and the printout are in examples/internal/agents;
// examples/internal/anthropic, a module of its own, runs them on
// Anthropic's API when ANTHROPIC_API_KEY is set.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/reprompt/reprompt/examples/internal/agents"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/runtime"
)

func main() {
	native := flag.Bool("native", false, "ask for the answer as a strict response_format")
	tool := flag.Bool("tool", false, "ask for the answer with an answer tool")
	flag.Parse()
	cfg := runtime.Config{Name: "triage"}
	switch {
	case *native:
		cfg.OutputMode = llm.OutputNative
	case *tool:
		cfg.OutputMode = llm.OutputTool
	}
	model, about := pickModel(agents.TriageScript())
	if err := agents.RunTriage(context.Background(), os.Stdout, model, about, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "structured:", err)
		os.Exit(1)
	}
}
