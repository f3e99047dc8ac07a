package main

import (
	"os"

	"github.com/reprompt/reprompt/examples/internal/models"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/providers/anthropic"
)

// liveModel is the choice of the live build (model_live.go): the model of
// anthropic.FromEnv when ANTHROPIC_API_KEY is set, and otherwise what the
// example's own live build runs on (an OpenAI-compatible endpoint from
// the environment, or offline), with a line describing it.
func liveModel(name string, offline llm.Model, what string) (llm.Model, string) {
	return fromEnv(offline, what+" (offline; set ANTHROPIC_API_KEY, or OPENAI_API_KEY or OPENAI_BASE_URL, to use a real one)")
}

// fromEnv returns the model of anthropic.FromEnv when ANTHROPIC_API_KEY is
// set, and models.Choose(offline, about) otherwise.
func fromEnv(offline llm.Model, about string) (llm.Model, string) {
	if os.Getenv(anthropic.EnvAPIKey) == "" {
		return models.Choose(offline, about)
	}
	m := anthropic.FromEnv()
	return m, "model " + m.ModelName() + " from the environment (Anthropic)"
}
