package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// heavy lists what the default (offline) build of the quickstart must not
// link: the network stack and the modules only other parts of reprompt need.
// Each of them costs the first `go run` on an empty build cache seconds of
// compiling (net/http and crypto/tls alone about a third of it); the README
// states what a cold start costs.
var heavy = []string{
	"net/http",
	"crypto/tls",
	"github.com/reprompt/reprompt/providers/openai",
	"github.com/sashabaranov/go-openai",
	"github.com/tiktoken-go/tokenizer",
	"github.com/getkin/kin-openapi",
	"modernc.org/",
	"github.com/jackc/",
}

// deps lists the packages a build of this directory links, with go list.
func deps(t *testing.T, tags string) []string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	require.NoError(t, err, "this test needs the go command")
	out, err := exec.Command(goBin, "list", "-tags", tags, "-deps", ".").Output()
	require.NoError(t, err, "go list -tags %q -deps", tags)
	return strings.Fields(string(out))
}

func linked(pkgs []string, prefix string) bool {
	return slices.ContainsFunc(pkgs, func(p string) bool {
		return p == prefix || strings.HasPrefix(p, strings.TrimSuffix(prefix, "/")+"/")
	})
}

// TestOfflineBuildStaysLight keeps the cold start of `go run
// ./examples/quickstart` small: the offline build links none of heavy, and
// the live build (-tags live) does link the OpenAI adapter, which shows that
// the listing sees the difference.
func TestOfflineBuildStaysLight(t *testing.T) {
	offline := deps(t, "")
	for _, h := range heavy {
		assert.False(t, linked(offline, h), "the offline quickstart links %s; keep it behind -tags live or out of the packages the quickstart imports", h)
	}
	live := deps(t, "live")
	assert.True(t, linked(live, "github.com/reprompt/reprompt/providers/openai") && linked(live, "net/http"), "the -tags live build does not link providers/openai and net/http: the listing cannot tell the builds apart")
}
