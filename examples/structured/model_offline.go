//go:build !live

package main

import (
	"fmt"
	"os"

	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/snapshots"
)

// pickModel returns the scripted model: this build is offline. The live
// build (model_live.go, -tags live) can use a real one.
func pickModel(script *snapshots.Model) (llm.Model, string) {
	if os.Getenv("OPENAI_API_KEY") != "" || os.Getenv("OPENAI_BASE_URL") != "" {
		fmt.Fprintln(os.Stderr, "structured: OPENAI_API_KEY or OPENAI_BASE_URL is set, but this build is offline; for a real model: go run -tags live ./examples/structured")
	}
	return script, "a scripted model (offline)"
}
