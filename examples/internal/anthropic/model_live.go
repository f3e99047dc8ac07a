//go:build live

package main

import "github.com/reprompt/reprompt/llm"

// pickModel returns the model from the environment: Anthropic when
// ANTHROPIC_API_KEY is set (see liveModel).
func pickModel(name string, offline llm.Model, what string) (llm.Model, string) {
	return liveModel(name, offline, what)
}
