// Command longsession simulates a long coding-agent session offline — a
// seeded model reading files of 2 to 8 KB, running tests with long outputs
// and failures, writing files, calling tools in parallel and answering
// summary requests — under a 32k-token window, once per context strategy.
//
// For each strategy it prints one line ending with
//
//	over_window=N pairing_errors=N prefix_reuse=R billed_input=T
//
// where over_window counts requests larger than the window, pairing_errors
// requests with a tool call and its result separated, prefix_reuse the share
// of input tokens that repeat the previous request's prefix (what a
// provider's prompt cache serves), and billed_input the input tokens of the
// agent's requests billed with cached tokens at a tenth of the price (the
// summarising calls are reported apart, as summary_input). It exits 1 if
// any request of any strategy went over the window or broke pairing.
//
// The strategies: baseline trims the results older than the four most
// recent at every step (the boundary moves at every step, as seed 000's
// effect does) and compacts like the default; default is
// builtin.Defaults for the window (trim each result once the model has
// answered it, summarise with the model above 0.8 of the window); window,
// truncate and heuristic are the rule-based compactions, with no model
// call.
//
//	go run ./examples/longsession [-steps 320] [-seed 1]
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/effects/builtin"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/tokens"
)

const (
	window  = 32768
	reserve = 4096
)

func main() {
	steps := flag.Int("steps", 320, "model calls per session (at least 300 for the check)")
	seed := flag.Uint64("seed", 1, "seed of the simulated model")
	flag.Parse()

	failed := false
	var baseline float64
	for _, st := range strategies() {
		m, err := simulate(st, *steps, *seed)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", st.name, err)
			os.Exit(1)
		}
		if st.name == "baseline" {
			baseline = m.billed
		}
		rel := ""
		if baseline > 0 && st.name != "baseline" {
			rel = fmt.Sprintf(" (%.2f of baseline)", m.billed/baseline)
		}
		fmt.Printf("%-9s steps=%d rewrites=%d summaries=%d summary_input=%d avg_request=%d max_request=%d%s over_window=%d pairing_errors=%d prefix_reuse=%.3f billed_input=%.0f\n",
			st.name, m.steps, m.rewrites, m.summaries, m.summaryInput, m.input/max(m.steps, 1), m.maxInput, rel, m.overWindow, m.pairing, m.reuse(), m.billed)
		if m.overWindow > 0 || m.pairing > 0 {
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

type strategy struct {
	name string
	// register declares the strategy's effects in the prompt function.
	register func(p *prompt.Prompt)
}

func strategies() []strategy {
	profile := builtin.Profile{Window: window, OutputReserve: reserve}
	return []strategy{
		{"baseline", func() func(p *prompt.Prompt) {
			// Seed 000's trimming: every step, results older than the four
			// most recent tool messages are cut, so the boundary moves at
			// every step; compaction as in the default.
			trim := movingTrim(4, 500)
			compact := builtin.Compact(builtin.CompactConfig{Window: window, Reserve: reserve})
			return func(p *prompt.Prompt) {
				p.Effect(effects.Always, trim, effects.InPhase(effects.AfterReply), effects.Key("baseline.trim"))
				p.Effect(effects.Always, compact, effects.Recovery(), effects.Key("baseline.compact"))
			}
		}()},
		{"default", func() func(p *prompt.Prompt) {
			cfg := builtin.Defaults(profile)
			return func(p *prompt.Prompt) { cfg.Register(p) }
		}()},
		{"window", func() func(p *prompt.Prompt) {
			trim := builtin.TrimToolResults(builtin.TrimConfig{})
			compact := builtin.Compact(builtin.CompactConfig{Window: window, Reserve: reserve, Strategy: builtin.StrategyWindow})
			return func(p *prompt.Prompt) {
				p.Effect(effects.Always, trim, effects.InPhase(effects.AfterReply), effects.Key("trim"))
				p.Effect(effects.Always, compact, effects.Recovery(), effects.Key("compact"))
			}
		}()},
		{"heuristic", func() func(p *prompt.Prompt) {
			trim := builtin.TrimToolResults(builtin.TrimConfig{PreserveTurns: 1, Batch: 1, MaxResultLength: 600})
			compact := builtin.Compact(builtin.CompactConfig{Window: window, Reserve: reserve, Strategy: builtin.StrategyHeuristic})
			return func(p *prompt.Prompt) {
				p.Effect(effects.Always, trim, effects.InPhase(effects.AfterReply), effects.Key("trim"))
				p.Effect(effects.Always, compact, effects.Recovery(), effects.Key("compact"))
			}
		}()},
		{"truncate", func() func(p *prompt.Prompt) {
			trim := builtin.TrimToolResults(builtin.TrimConfig{})
			compact := builtin.Compact(builtin.CompactConfig{Window: window, Reserve: reserve, Strategy: builtin.StrategyTruncate})
			return func(p *prompt.Prompt) {
				p.Effect(effects.Always, trim, effects.InPhase(effects.AfterReply), effects.Key("trim"))
				p.Effect(effects.Always, compact, effects.Recovery(), effects.Key("compact"))
			}
		}()},
	}
}

// movingTrim is the baseline trimming: at every step, every tool result but
// the keep most recent is cut to max bytes, marked, and committed.
func movingTrim(keep, max int) effects.Func {
	return func(ctx context.Context, s *effects.Step) error {
		msgs := s.Transcript()
		seen, changed := 0, false
		out := msgs
		for i := len(msgs) - 1; i >= 0; i-- {
			m := msgs[i]
			if m.Role != defs.RoleTool {
				continue
			}
			seen++
			if seen <= keep || m.IsError || m.Meta["trimmed"] != "" || len(m.Content) <= max {
				continue
			}
			if !changed {
				out = append([]defs.Message(nil), msgs...)
				changed = true
			}
			m.Content = m.Content[:max] + "\n[trimmed]"
			m.Meta = map[string]string{"trimmed": "true"}
			out[i] = m
		}
		if changed {
			s.CommitMessages(out)
		}
		return nil
	}
}

type metrics struct {
	steps, overWindow, pairing, maxInput, rewrites int
	summaries, summaryInput                        int
	input, prefix                                  int
	billed                                         float64
}

func (m metrics) reuse() float64 {
	if m.input == 0 {
		return 0
	}
	return float64(m.prefix) / float64(m.input)
}

func simulate(st strategy, steps int, seed uint64) (metrics, error) {
	var m metrics
	sim := newSim(steps, seed)
	agent := func(p *prompt.Prompt) error {
		sim.declare(p)
		st.register(p)
		return nil
	}
	cfg := runtime.Config{MaxSteps: steps + 10, Window: window, Reserve: reserve, Counter: tokens.ForModel("gpt-4o")}
	r := runtime.New(sim, agent, cfg)
	for rec, err := range r.All(context.Background()) {
		if err != nil {
			return m, fmt.Errorf("step %d: %w", m.steps, err)
		}
		m.steps++
		if rec.Committed {
			m.rewrites++
		}
		if rec.InputTokens > window {
			m.overWindow++
		}
		m.maxInput = max(m.maxInput, rec.InputTokens)
		if runtime.ValidateMessages(rec.Request.Messages) != nil {
			m.pairing++
		}
		m.input += rec.InputTokens
		m.prefix += rec.PrefixTokens
		m.billed += rec.BilledInput
	}
	m.summaries, m.summaryInput = sim.summaries, sim.summaryInput
	return m, nil
}

// sim is the simulated coding agent: a model and the tools it calls.
type sim struct {
	rng          *rand.Rand
	steps        int
	calls        int // model calls answered (summaries excluded)
	summaries    int // summarising calls answered
	summaryInput int // their input tokens
	counter      runtime.Counter
	ids          int
	files        []string
}

func newSim(steps int, seed uint64) *sim {
	s := &sim{rng: rand.New(rand.NewPCG(seed, 7)), steps: steps, counter: tokens.ForModel("gpt-4o")}
	for i := range 40 {
		s.files = append(s.files, fmt.Sprintf("internal/pkg%d/file%d.go", i%7, i))
	}
	return s
}

// content returns a deterministic file of 2 to 8 KB.
func content(path string, version int) string {
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

func (s *sim) declare(p *prompt.Prompt) {
	modified, setModified := prompt.State(p, "modified", []string{})
	p.DefSystem("role", "You are a coding agent working in a Go repository. Read code, change it, run the tests, until they pass.")
	p.DefSystem("rules", strings.Repeat("Prefer small, reviewed changes. Run the tests after every change. ", 6))
	prompt.DefTool(p, "read_file", "Read a file.", func(ctx context.Context, a pathArgs) (string, error) {
		return content(a.Path, 0), nil
	})
	prompt.DefTool(p, "write_file", "Write a file.", func(ctx context.Context, a writeArgs) (string, error) {
		setModified.Update(func(m []string) []string { return append(append([]string(nil), m...), a.Path) })
		return fmt.Sprintf("wrote %d bytes to %s", len(a.Content), a.Path), nil
	})
	prompt.DefTool(p, "run_tests", "Run the test suite.", func(ctx context.Context, _ struct{}) (string, error) {
		out := testOutput(len(modified))
		if len(modified)%3 != 2 {
			return "", fmt.Errorf("tests failed:\n%s", out[:min(len(out), 1500)])
		}
		return out, nil
	})
	prompt.DefTool(p, "grep", "Search the repository.", func(ctx context.Context, a grepArgs) (string, error) {
		var b strings.Builder
		for i := range 25 {
			fmt.Fprintf(&b, "internal/pkg%d/file%d.go:%d: %s(...)\n", i%7, i, 10+i*3, a.Pattern)
		}
		return b.String(), nil
	})
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
func (s *sim) Generate(ctx context.Context, req *runtime.Request) (*runtime.Reply, error) {
	if len(req.Tools) == 0 && len(req.Messages) == 1 { // a summarising call
		s.summaries++
		s.summaryInput += s.counter.Text(req.System) + s.counter.Message(req.Messages[0])
		var b strings.Builder
		b.WriteString("Goal: fix the failing tests in internal/.\nProgress: read the failing packages, changed several functions, tests still partly failing.\n")
		for i := range 12 {
			fmt.Fprintf(&b, "Key fact %d: %s in %s\n", i, words[s.rng.IntN(len(words))], s.files[s.rng.IntN(len(s.files))])
		}
		b.WriteString("Next steps: run the tests again and fix the remaining failures.")
		return &runtime.Reply{Message: defs.AssistantMessage(b.String())}, nil
	}
	s.calls++
	if s.calls >= s.steps {
		return &runtime.Reply{Message: defs.AssistantMessage("All tests pass now: the refactoring had swapped two arguments.")}, nil
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
	return &runtime.Reply{Message: msg}, nil
}
