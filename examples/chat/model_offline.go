//go:build !live

package main

import (
	"fmt"
	"os"

	"github.com/reprompt/reprompt/llm"
)

// pickModel returns the offline model: this build has no network code. The
// live build (model_live.go, -tags live) can use a real one.
func pickModel(offline llm.Model) (llm.Model, string) {
	if os.Getenv("OPENAI_API_KEY") != "" || os.Getenv("OPENAI_BASE_URL") != "" {
		fmt.Fprintln(os.Stderr, "chat: OPENAI_API_KEY or OPENAI_BASE_URL is set, but this build is offline; for a real model: go run -tags live ./examples/chat")
	}
	return offline, "offline echo model (for a real one: -tags live and OPENAI_BASE_URL or OPENAI_API_KEY)"
}
