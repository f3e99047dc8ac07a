//go:build !live

package main

import (
	"fmt"
	"os"

	"github.com/reprompt/reprompt/llm"
)

// pickModel returns the offline model: this build uses no real one. The
// live build (model_live.go, -tags live) runs on Anthropic.
func pickModel(name string, offline llm.Model, what string) (llm.Model, string) {
	if os.Getenv("ANTHROPIC_API_KEY") != "" {
		fmt.Fprintf(os.Stderr, "%s: ANTHROPIC_API_KEY is set, but this build is offline; for Anthropic: go run -tags live . %s\n", name, name)
	}
	return offline, fmt.Sprintf("%s (offline; go run -tags live . %s with ANTHROPIC_API_KEY set uses Anthropic)", what, name)
}
