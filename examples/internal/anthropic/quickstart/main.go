// Command quickstart runs the quickstart's to-do agent (package
// examples/internal/agents, the same agent, script and printout as
// examples/quickstart) on Anthropic's API. It is in a module of its own so
// that the root module does not require providers/anthropic and its SDK.
//
// Built with -tags live, it runs on Anthropic when ANTHROPIC_API_KEY is set
// (anthropic.FromEnv: ANTHROPIC_BASE_URL and ANTHROPIC_MODEL are read
// too), otherwise as examples/quickstart's live build does: on an
// OpenAI-compatible endpoint when OPENAI_API_KEY or OPENAI_BASE_URL is
// set, and on the scripted model when none is. From this directory's
// module:
//
//	cd examples/internal/anthropic
//	ANTHROPIC_API_KEY=sk-ant-… go run -tags live ./quickstart
//
// Without the tag it runs offline, on the scripted model.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/reprompt/reprompt/examples/internal/agents"
	"github.com/reprompt/reprompt/runtime"
)

func main() {
	model, about := pickModel(agents.TodoScript())
	cfg := runtime.Config{MaxSteps: 20, Name: "quickstart"}
	if err := agents.RunTodo(context.Background(), os.Stdout, model, about, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "run failed:", err)
		os.Exit(1)
	}
}
