//go:build live

package main

import (
	"github.com/reprompt/reprompt/examples/internal/models"
	"github.com/reprompt/reprompt/llm"
)

// pickModel returns the model from the environment (providers/openai) when
// OPENAI_API_KEY or OPENAI_BASE_URL is set, and the offline model otherwise.
func pickModel(offline llm.Model) (llm.Model, string) {
	return models.Choose(offline, "offline echo model (for a real one: OPENAI_BASE_URL or OPENAI_API_KEY)")
}
