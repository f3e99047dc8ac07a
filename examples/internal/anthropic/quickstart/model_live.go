//go:build live

package main

import (
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/snapshots"
)

// pickModel returns the model from the environment: Anthropic when
// ANTHROPIC_API_KEY is set (see fromEnv).
func pickModel(script *snapshots.Model) (llm.Model, string) {
	return fromEnv(script)
}
