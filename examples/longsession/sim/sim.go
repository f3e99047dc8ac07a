// Package sim is the simulated coding session of examples/longsession: a
// seeded model that reads files of 2 to 8 KB, runs tests with long outputs
// and failures, writes files, calls tools in parallel and answers summary
// requests, and the tools it calls, under a 32k-token window with 4k of it
// reserved for the reply. It is a package of its own so that the adapters'
// tests can run the same session through their wire.
package sim

import (
	"context"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/tokens"
)

// The session's window and the part of it kept for the reply.
const (
	Window  = 32768
	Reserve = 4096
)

// MemoCounter is an exact counter that remembers the count of every text
// it has seen (by its hash), so that recounting a transcript costs only its
// new texts, and the sessions of every strategy and seed share what was
// counted (a file read twice is counted once). The counts are the
// underlying counter's: a message counts its parts (tokens.MessageCount).
// It is safe for concurrent use.
type MemoCounter struct {
	tokens.Counter
	seed  maphash.Seed
	mu    sync.Mutex
	texts map[uint64]int
}

// Counter is the counter of every simulated session.
var Counter = &MemoCounter{Counter: tokens.ForModel("gpt-4o"), seed: maphash.MakeSeed(), texts: map[uint64]int{}}

func (c *MemoCounter) Text(s string) int {
	key := maphash.String(c.seed, s)
	c.mu.Lock()
	n, ok := c.texts[key]
	c.mu.Unlock()
	if ok {
		return n
	}
	n = c.Counter.Text(s)
	c.mu.Lock()
	c.texts[key] = n
	c.mu.Unlock()
	return n
}

func (c *MemoCounter) Message(m defs.Message) int { return tokens.MessageCount(c.Text, m) }

// Model is the simulated coding agent: a model and the tools it calls
// (Declare).
type Model struct {
	rng        *rand.Rand // the agent's actions
	summaryRng *rand.Rand // the summaries' contents
	steps      int
	calls      int // model calls answered (summaries excluded)
	summaries  int // summarising calls answered
	toggle     int // see New
	ids        int
	files      []string
}

// New returns the agent of a session of steps model calls, its actions
// drawn from seed. With toggle > 0, Declare disables the grep tool for
// toggle steps every 2·toggle steps (steps toggle to 2·toggle-1, …).
func New(steps int, seed uint64, toggle int) *Model {
	s := &Model{
		rng:        rand.New(rand.NewPCG(seed, 7)),
		summaryRng: rand.New(rand.NewPCG(seed, 8)),
		steps:      steps,
		toggle:     toggle,
	}
	for i := range 40 {
		s.files = append(s.files, fmt.Sprintf("internal/pkg%d/file%d.go", i%7, i))
	}
	return s
}

// contents holds the files content made, by path and version: every
// session reads the same few.
var contents sync.Map

// content returns a deterministic file of 2 to 8 KB.
func content(path string, version int) string {
	key := fmt.Sprint(version, ":", path)
	if c, ok := contents.Load(key); ok {
		return c.(string)
	}
	c := makeContent(path, version)
	contents.Store(key, c)
	return c
}

func makeContent(path string, version int) string {
	r := rand.New(rand.NewPCG(uint64(len(path))*31+uint64(version), uint64(strings.Count(path, "1"))+uint64(path[len(path)-4])))
	n := 2048 + r.IntN(6144)
	var b strings.Builder
	fmt.Fprintf(&b, "// %s (version %d)\npackage x\n\n", path, version)
	for b.Len() < n {
		fmt.Fprintf(&b, "func f%d(a, b int) int {\n\treturn a*%d + b - %d // %s\n}\n\n", r.IntN(1e6), r.IntN(97), r.IntN(89), words[r.IntN(len(words))])
	}
	return b.String()[:n]
}

var words = []string{"cache", "parse", "token", "window", "request", "state", "effect", "render", "summary", "retry"}

type pathArgs struct {
	Path string `json:"path"`
}

type writeArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

type grepArgs struct {
	Pattern string `json:"pattern"`
}

// Summaries returns the number of summarising calls the model answered.
func (s *Model) Summaries() int { return s.summaries }

// Declare declares the agent's system prompt, tools and task.
func (s *Model) Declare(p *prompt.Prompt) {
	modified, setModified := prompt.State(p, "modified", []string{})
	p.DefSystem("role", "You are a coding agent working in a Go repository. Read code, change it, run the tests, until they pass.")
	p.DefSystem("rules", strings.Repeat("Prefer small, reviewed changes. Run the tests after every change. ", 6))
	prompt.DefTool(p, "read_file", "Read a file.", func(ctx context.Context, a pathArgs) (string, error) {
		return content(a.Path, 0), nil
	})
	prompt.DefTool(p, "write_file", "Write a file.", func(ctx context.Context, a writeArgs) (string, error) {
		setModified.Update(ctx, func(m []string) []string { return append(append([]string(nil), m...), a.Path) })
		return fmt.Sprintf("wrote %d bytes to %s", len(a.Content), a.Path), nil
	})
	prompt.DefTool(p, "run_tests", "Run the test suite.", func(ctx context.Context, _ struct{}) (string, error) {
		out := testOutput(len(modified))
		if len(modified)%3 != 2 {
			return "", fmt.Errorf("tests failed:\n%s", out[:min(len(out), 1500)])
		}
		return out, nil
	})
	grep := prompt.DefTool(p, "grep", "Search the repository.", func(ctx context.Context, a grepArgs) (string, error) {
		var b strings.Builder
		for i := range 25 {
			fmt.Fprintf(&b, "internal/pkg%d/file%d.go:%d: %s(...)\n", i%7, i, 10+i*3, a.Pattern)
		}
		return b.String(), nil
	})
	if s.toggle > 0 && p.Step()/s.toggle%2 == 1 {
		grep.Disable()
	}
	p.User("The tests in internal/ fail since the last refactoring. Find out why and fix them.")
}

func testOutput(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < 3000+(n%4)*1000; i++ {
		fmt.Fprintf(&b, "=== RUN   TestCase%d\n--- PASS: TestCase%d (0.0%ds)\n", i, i, i%10)
		if i%9 == 4 {
			fmt.Fprintf(&b, "    case_test.go:%d: got %d, want %d\n--- FAIL: TestCase%d\n", 20+i, i, i+1, i)
		}
	}
	return b.String()
}

// Generate answers as the agent would: summary requests with a summary, and
// otherwise the next action of a long debugging session.
func (s *Model) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	if req.Purpose == llm.PurposeSummary {
		s.summaries++
		var b strings.Builder
		b.WriteString("Goal: fix the failing tests in internal/.\nProgress: read the failing packages, changed several functions, tests still partly failing.\n")
		for i := range 12 {
			fmt.Fprintf(&b, "Key fact %d: %s in %s\n", i, words[s.summaryRng.IntN(len(words))], s.files[s.summaryRng.IntN(len(s.files))])
		}
		b.WriteString("Next steps: run the tests again and fix the remaining failures.")
		return &llm.Reply{Message: defs.AssistantMessage(b.String())}, nil
	}
	s.calls++
	if s.calls >= s.steps {
		return &llm.Reply{Message: defs.AssistantMessage("All tests pass now: the refactoring had swapped two arguments.")}, nil
	}
	msg := defs.Message{Role: defs.RoleAssistant}
	call := func(name, args string) {
		s.ids++
		msg.ToolCalls = append(msg.ToolCalls, defs.ToolCall{ID: fmt.Sprintf("call_%d", s.ids), Name: name, Arguments: []byte(args)})
	}
	file := func() string { return s.files[s.rng.IntN(len(s.files))] }
	switch x := s.rng.IntN(100); {
	case x < 25:
		call("read_file", fmt.Sprintf(`{"path":%q}`, file()))
	case x < 40: // parallel reads
		for range 2 + s.rng.IntN(2) {
			call("read_file", fmt.Sprintf(`{"path":%q}`, file()))
		}
	case x < 65:
		call("run_tests", `{}`)
	case x < 85:
		msg.Content = "Fixing the argument order."
		call("write_file", fmt.Sprintf(`{"path":%q,"content":"package x\n\nfunc fixed() {}\n"}`, file()))
	default:
		call("grep", fmt.Sprintf(`{"pattern":%q}`, words[s.rng.IntN(len(words))]))
	}
	return &llm.Reply{Message: msg}, nil
}
