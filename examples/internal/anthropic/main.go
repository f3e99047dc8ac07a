// Command anthropic runs the examples' agents (package
// examples/internal/agents) on Anthropic's API: the quickstart's to-do
// agent, structured's triage and chat's notes, printed as
// examples/quickstart, examples/structured and examples/chat print them.
// It is a module of its own so that the root module does not require
// providers/anthropic and its SDK. From the repository's root:
//
//	ANTHROPIC_API_KEY=sk-ant-… go -C examples/internal/anthropic run -tags live . quickstart
//	ANTHROPIC_API_KEY=sk-ant-… go -C examples/internal/anthropic run -tags live . structured [-native | -tool]
//	ANTHROPIC_API_KEY=sk-ant-… go -C examples/internal/anthropic run -tags live . chat [-db FILE] [-session ID]
//
// The first argument names the example; the flags after it are that
// example's own. Built with -tags live, it runs on Anthropic when
// ANTHROPIC_API_KEY is set (anthropic.FromEnv: ANTHROPIC_BASE_URL and
// ANTHROPIC_MODEL are read too), otherwise as the example's own live build
// does: on an OpenAI-compatible endpoint when OPENAI_API_KEY or
// OPENAI_BASE_URL is set, and on the example's offline model when none is.
// Without the tag it runs offline.
//
// On Anthropic, structured asks for its typed answer as
// output_config.format (Anthropic's structured outputs) when the model
// takes it (Claude Opus 4.1, the 4.5 generation and later; see
// anthropic.Config.NativeOutput), and with an answer tool otherwise;
// -native and -tool decide instead.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/reprompt/reprompt/llm"
)

// stdio are the standard streams of a run.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// picker returns the model the example name runs on, given its offline
// model, which what names ("scripted model"), and a line describing it
// (pickModel, or liveModel in tests).
type picker func(name string, offline llm.Model, what string) (llm.Model, string)

// example runs one example with the arguments that follow its name.
type example func(ctx context.Context, args []string, sio stdio, pick picker) error

var examples = map[string]example{
	"quickstart": quickstart,
	"structured": structured,
	"chat":       chat,
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli(ctx, os.Args[1:], stdio{os.Stdin, os.Stdout, os.Stderr}, pickModel)
	stop()
	os.Exit(code)
}

// cli runs the example args[0] names with the rest of args, and returns
// the exit status: 2 for a wrong command line, 130 when ctx was cancelled
// (an interrupt), 1 for another error.
func cli(ctx context.Context, args []string, sio stdio, pick picker) int {
	if len(args) == 0 || examples[args[0]] == nil {
		fmt.Fprintf(sio.err, "usage: anthropic %s [flags]\n", strings.Join(slices.Sorted(maps.Keys(examples)), "|"))
		return 2
	}
	name := args[0]
	err := examples[name](ctx, args[1:], sio, pick)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage):
		return 2
	case ctx.Err() != nil && name == "chat":
		fmt.Fprintln(sio.err, "\nchat: interrupted; run it again to continue the conversation")
		return 130
	case ctx.Err() != nil:
		fmt.Fprintf(sio.err, "\n%s: interrupted\n", name)
		return 130
	}
	fmt.Fprintf(sio.err, "%s: %v\n", name, err)
	return 1
}

// errUsage is returned by an example whose flags were wrong (its flag set
// printed why).
var errUsage = errors.New("usage")
