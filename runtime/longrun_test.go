package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects/builtin"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
	"github.com/reprompt/reprompt/tokens"
)

// The long run with exact counts: a coding agent reading 2 KB files under
// the default context management of gpt-4o (trim every result after the
// next reply, compact near the window), counted by the gpt-4o tokenizer.
const (
	longRunWindow = 128_000
	longRunResult = 2048 // bytes of each tool result
)

var longRunWords = []string{"cache", "parse", "token", "window", "request", "state", "effect", "render",
	"summary", "retry", "func", "return", "int", "err", "nil", "ctx", "if", "for", "range", "map"}

// longRunFile returns the deterministic, distinct content of file i:
// Go-like text of longRunResult bytes.
func longRunFile(i int) string {
	r := rand.New(rand.NewPCG(uint64(i), 11))
	var b strings.Builder
	fmt.Fprintf(&b, "// file%d.go\npackage x\n\n", i)
	for b.Len() < longRunResult {
		fmt.Fprintf(&b, "func %s%d(a, b int) int {\n\treturn a*%d + b - %d // %s %s\n}\n\n",
			longRunWords[r.IntN(len(longRunWords))], r.IntN(1e6), r.IntN(97), r.IntN(89),
			longRunWords[r.IntN(len(longRunWords))], longRunWords[r.IntN(len(longRunWords))])
	}
	return b.String()[:longRunResult]
}

type readArgs struct {
	Path string `json:"path"`
}

// longRunAgent is the prompt function of the long run, with the default
// effects for a window of window tokens (reserve kept for the reply).
func longRunAgent(window, reserve int) prompt.Func {
	cfg := builtin.Defaults(builtin.Profile{Window: window, OutputReserve: reserve})
	return func(p *prompt.Prompt) error {
		p.DefSystem("role", "You are a coding agent working in a Go repository. Read code, change it, run the tests.")
		p.DefSystem("rules", strings.Repeat("Prefer small, reviewed changes. Run the tests after every change. ", 6))
		prompt.DefTool(p, "read_file", "Read a file of the repository.",
			func(ctx context.Context, a readArgs) (string, error) {
				i, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(a.Path, "file"), ".go"))
				if err != nil {
					return "", err
				}
				return longRunFile(i), nil
			})
		cfg.Register(p)
		p.User("Read the files one by one and report.")
		return nil
	}
}

// longRunScript reads a different file at every step but the last.
func longRunScript(steps int) []snapshots.Reply {
	replies := make([]snapshots.Reply, steps)
	for i := range steps - 1 {
		replies[i] = snapshots.CallTool("read_file", readArgs{Path: "file" + strconv.Itoa(i) + ".go"})
	}
	replies[steps-1] = snapshots.Text("All read.")
	return replies
}

const longRunReserve = 16_384 // gpt-4o's output reserve

// BenchmarkLongRunExact is the cost of exact token counts over a long run
// whose transcript the default trimming rewrites at almost every step: the
// per-step cost (ns/step) must not grow with the history.
func BenchmarkLongRunExact(b *testing.B) {
	c := tokens.ForModel("gpt-4o")
	c.Text("warm up") // load the encoding outside the timings
	for _, steps := range []int{30, 300} {
		b.Run(fmt.Sprintf("steps=%d", steps), func(b *testing.B) {
			script := longRunScript(steps)
			benchSteps(b, steps, func() (*runtime.Result, error) {
				return runtime.Run(context.Background(), snapshots.Script(script...), longRunAgent(longRunWindow, longRunReserve),
					runtime.Config{MaxSteps: steps, Window: longRunWindow, Reserve: longRunReserve, Counter: c})
			})
		})
	}
}

// tokenisations wraps a Counter and records how many times each distinct
// message (by its counted fields) is tokenised.
type tokenisations struct {
	tokens.Counter
	mu   sync.Mutex
	seen map[string]int
}

func messageKey(m defs.Message) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%q %q %q %q", m.Role, m.Content, m.Name, m.ToolCallID)
	for _, c := range m.ToolCalls {
		fmt.Fprintf(&b, " %q %q %q", c.ID, c.Name, c.Arguments)
	}
	return b.String()
}

func (c *tokenisations) Message(m defs.Message) int {
	c.mu.Lock()
	c.seen[messageKey(m)]++
	c.mu.Unlock()
	return c.Counter.Message(m)
}

// readerModel reads file i at step i until it has read n files, and answers
// summarising requests (llm.PurposeSummary) with a short summary.
type readerModel struct {
	n, calls, summaries int
}

func (m *readerModel) Generate(ctx context.Context, req *llm.Request) (*llm.Reply, error) {
	if req.Purpose == llm.PurposeSummary {
		m.summaries++
		return &llm.Reply{Message: defs.AssistantMessage(fmt.Sprintf("Read files up to %d; nothing found yet.", m.calls))}, nil
	}
	if m.calls >= m.n {
		return &llm.Reply{Message: defs.AssistantMessage("All read.")}, nil
	}
	args, _ := json.Marshal(readArgs{Path: "file" + strconv.Itoa(m.calls) + ".go"})
	m.calls++
	return &llm.Reply{Message: defs.Message{ToolCalls: []defs.ToolCall{{ID: "call_" + strconv.Itoa(m.calls), Name: "read_file", Arguments: args}}}}, nil
}

// TestExactCountsTokeniseEachMessageOnce runs long runs under the default
// context management, whose trimming rewrites the transcript at every step
// and whose compaction replaces most of it by a summary, and checks that no
// message is tokenised twice, and that every step's count is the count of
// its request from scratch.
func TestExactCountsTokeniseEachMessageOnce(t *testing.T) {
	for _, tc := range []struct {
		name            string
		window, reserve int
		steps           int
		compactions     bool
	}{
		{"trimming", longRunWindow, longRunReserve, 60, false},
		{"compaction", 12_000, 2_000, 60, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exact := tokens.ForModel("gpt-4o")
			c := &tokenisations{Counter: exact, seen: map[string]int{}}
			m := &readerModel{n: tc.steps - 1}
			res, err := runtime.Run(context.Background(), m, longRunAgent(tc.window, tc.reserve),
				runtime.Config{MaxSteps: tc.steps, Window: tc.window, Reserve: tc.reserve, Counter: c})
			require.NoError(t, err)
			require.Len(t, res.Steps, tc.steps, "steps run")
			require.Equal(t, tc.compactions, m.summaries > 0, "%d summaries: the run does not exercise what it should", m.summaries)
			rewrites := 0
			for _, s := range res.Steps {
				if s.Committed {
					rewrites++
				}
			}
			assert.GreaterOrEqual(t, rewrites, tc.steps/2, "rewrites in %d steps", tc.steps)
			for k, n := range c.seen {
				assert.LessOrEqual(t, n, 1, "times tokenised: %.80s", k)
			}
			// Every count from scratch, each distinct message tokenised once.
			memo := map[string]int{}
			for i, s := range res.Steps {
				want := exact.Text(s.Request().System)
				for _, tool := range s.Request().Tools {
					want += exact.Tool(tool.Name, tool.Description, tool.Parameters)
				}
				for _, m := range s.Request().Messages {
					k := messageKey(m)
					n, ok := memo[k]
					if !ok {
						n = exact.Message(m)
						memo[k] = n
					}
					want += n
				}
				assert.Equal(t, want, s.InputTokens, "step %d: InputTokens against a count from scratch", i)
			}
			t.Logf("%d steps, %d rewrites, %d summaries, %d distinct messages tokenised", len(res.Steps), rewrites, m.summaries, len(c.seen))
		})
	}
}
