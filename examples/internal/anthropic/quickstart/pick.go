package main

import (
	"os"

	"github.com/reprompt/reprompt/examples/internal/models"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/providers/anthropic"
	"github.com/reprompt/reprompt/snapshots"
)

// fromEnv returns the model of anthropic.FromEnv when ANTHROPIC_API_KEY is
// set, and otherwise what examples/quickstart's live build runs on (an
// OpenAI-compatible endpoint from the environment, or script), with a
// line describing it. The live build runs on it.
func fromEnv(script *snapshots.Model) (llm.Model, string) {
	if os.Getenv(anthropic.EnvAPIKey) == "" {
		return models.Choose(script, "scripted model (offline; set ANTHROPIC_API_KEY, or OPENAI_API_KEY or OPENAI_BASE_URL, to use a real one)")
	}
	m := anthropic.FromEnv()
	return m, "model " + m.ModelName() + " from the environment (Anthropic)"
}
