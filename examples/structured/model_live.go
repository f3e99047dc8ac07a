//go:build live

package main

import (
	"github.com/reprompt/reprompt/examples/internal/models"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/snapshots"
)

// pickModel returns the model from the environment (providers/openai) when
// OPENAI_API_KEY or OPENAI_BASE_URL is set, and the scripted model otherwise.
func pickModel(script *snapshots.Model) (llm.Model, string) {
	return models.Pick(script)
}
