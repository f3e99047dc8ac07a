// Package models picks the model the examples run on: the scripted model
// by default (offline), or an OpenAI-compatible endpoint when
// OPENAI_API_KEY or OPENAI_BASE_URL is set.
package models

import (
	"os"

	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/providers/openai"
	"github.com/reprompt/reprompt/snapshots"
)

// Pick returns the model to run on and a line describing it.
func Pick(script *snapshots.Model) (llm.Model, string) {
	return Choose(script, "scripted model (offline; set OPENAI_API_KEY or OPENAI_BASE_URL to use a real one)")
}

// Choose returns offline, described by about, when neither OPENAI_API_KEY
// nor OPENAI_BASE_URL is set, and the model of openai.FromEnv otherwise,
// with a line describing the one returned. It is Pick for an offline model
// that is not a script.
func Choose(offline llm.Model, about string) (llm.Model, string) {
	if os.Getenv("OPENAI_API_KEY") == "" && os.Getenv("OPENAI_BASE_URL") == "" {
		return offline, about
	}
	m := openai.FromEnv()
	return m, "model " + m.Name() + " from the environment"
}
