//go:build !live

package main

import (
	"fmt"
	"os"

	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/snapshots"
)

// pickModel returns the scripted model: this build is offline. The live
// build (model_live.go, -tags live) runs on Anthropic.
func pickModel(script *snapshots.Model) (llm.Model, string) {
	if os.Getenv("ANTHROPIC_API_KEY") != "" {
		fmt.Fprintln(os.Stderr, "quickstart: ANTHROPIC_API_KEY is set, but this build is offline; for Anthropic: go run -tags live ./quickstart")
	}
	return script, "scripted model (offline; go run -tags live ./quickstart with ANTHROPIC_API_KEY set uses Anthropic)"
}
