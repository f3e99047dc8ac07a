package builtin_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/effects/builtin"
	"github.com/reprompt/reprompt/prompt"
)

func ExampleParse() {
	cfg, err := builtin.Parse("agent.yaml", []byte(`
effects:
  - kind: trim_tool_results
    params: {max_result_length: 400}
  - kind: compact
    params: {threshold: 0.75}
    when: step > 2
  - kind: limits
    params: {max_cost: 2.5, max_time: 10m}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range cfg.Effects {
		fmt.Printf("%s (%s) line %d when %q\n", e.Kind, e.Phase, e.Line, e.When)
	}
	// In the prompt function:
	_ = func(p *prompt.Prompt) error {
		cfg.Register(p)
		return nil
	}
	// Output:
	// trim_tool_results (after-reply) line 3 when ""
	// compact (before-call) line 5 when "step > 2"
	// limits (before-call) line 8 when ""
}

func ExampleParse_errors() {
	_, err := builtin.Parse("agent.yaml", []byte(`
effects:
  - kind: compact
    params: {treshold: 0.75}
  - kind: limits
    when: cost > "a lot"
`))
	fmt.Println(strings.ReplaceAll(err.Error(), "arg_keys, fallback, keep_recent_tokens, max_failures, max_result_length, modify_tools, read_tools, reserve, state_key, strategy, summary_input_tokens, summary_max_tokens, system_prompt, target, threshold, trim_recent, window, window_messages", "…"))
	// Output:
	// agent.yaml:4:14: compact: unknown param "treshold" (want one of …)
	// agent.yaml:6:16: when: invalid operation: > (mismatched types float64 and string)
}

func ExampleProfileFor() {
	for _, m := range []string{"gpt-4o-2024-08-06", "ollama/qwen2.5-coder:7b", "my-model"} {
		p := builtin.ProfileFor(m)
		fmt.Printf("%s: window %d, reserve %d, local %v\n", m, p.EffectiveWindow(), p.OutputReserve, p.Local)
	}
	// Output:
	// gpt-4o-2024-08-06: window 128000, reserve 16384, local false
	// ollama/qwen2.5-coder:7b: window 32768, reserve 4096, local true
	// my-model: window 0, reserve 0, local false
}

func ExampleLimits() {
	limits := builtin.Limits(builtin.LimitsConfig{MaxIterations: 10})
	s := effects.NewStep(10, []defs.Message{defs.UserMessage("task")})
	s.Stats.Steps = 10
	err := limits(context.Background(), s)
	fmt.Println(err, errors.Is(err, builtin.ErrIterationLimit))
	// Output:
	// iteration limit reached: used 10 model calls of 10 model calls true
}

// summariser is a Completer that answers with a fixed summary.
type summariser string

func (s summariser) Complete(ctx context.Context, system, user string) (string, error) {
	return string(s), nil
}

func ExampleCompact() {
	compact := builtin.Compact(builtin.CompactConfig{
		Model:            summariser("The user wants the tests fixed; parser.go was read and edited."),
		KeepRecentTokens: 30,
		OnCompaction: func(i builtin.Info) {
			fmt.Printf("%s: %d messages summarised, %d kept, split turn %v\n", i.Strategy, i.Summarized, i.Kept, i.SplitTurn)
		},
	})
	transcript := []defs.Message{
		defs.UserMessage("Fix the failing tests."),
		{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: "1", Name: "read_file", Arguments: []byte(`{"path":"parser.go"}`)}}},
		defs.ToolResult{CallID: "1", Name: "read_file", Content: strings.Repeat("package parser\n", 200)}.Message(),
		{Role: defs.RoleAssistant, ToolCalls: []defs.ToolCall{{ID: "2", Name: "edit_file", Arguments: []byte(`{"path":"parser.go"}`)}}},
		defs.ToolResult{CallID: "2", Name: "edit_file", Content: "ok"}.Message(),
		defs.AssistantMessage("Fixed parser.go."),
		defs.UserMessage("Now run them."),
	}
	s := effects.NewStep(3, transcript)
	s.Budget.Window = 1000
	if err := compact(context.Background(), s); err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range s.Transcript() {
		fmt.Printf("[%s] %s\n", m.Role, m.Content)
	}
	// Output:
	// summarize: 4 messages summarised, 2 kept, split turn true
	// [user] Fix the failing tests.
	// [user] <summary>
	// This summary replaces the earlier part of the conversation; the messages after it continue from where it ends.
	//
	// The user wants the tests fixed; parser.go was read and edited.
	//
	// <modified-files>
	// parser.go
	// </modified-files>
	// </summary>
	// [assistant] Fixed parser.go.
	// [user] Now run them.
}
