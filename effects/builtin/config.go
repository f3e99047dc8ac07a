package builtin

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
	"weak"

	"github.com/expr-lang/expr/vm"

	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/prompt"
)

// Kinds of effect a configuration may list.
const (
	KindTrimToolResults = "trim_tool_results"
	KindCompact         = "compact"
	KindLimits          = "limits"
)

// Config is a list of effects read from YAML by Load or Parse, or made by
// Defaults. Register it in a prompt function with Register.
//
// A Config is safe for concurrent use: each prompt it is registered in
// (each run, each sub-agent) gets its own instances of the effects.
type Config struct {
	// File is the name errors are reported against.
	File string
	// Profile is the model's profile, from the file's model, window and
	// reserve keys; zero when the file names none.
	Profile Profile
	// Effects are the effects, in registration order.
	Effects []Effect
	// OnCompaction, if set, is given to every compact effect (see
	// CompactConfig.OnCompaction).
	OnCompaction func(Info)
	// WhenTimeout bounds the evaluation of each when condition, from the
	// file's when_timeout key; past it the effect fails with a *WhenError
	// (Err ErrWhenTimeout). Zero (or less) means DefaultWhenTimeout. The
	// run's context bounds it too.
	WhenTimeout time.Duration

	mu   sync.Mutex
	inst map[weak.Pointer[prompt.Prompt]][]effects.Func
}

// Effect is one configured effect. Exactly one of Trim, Compact and Limits
// is set, as Kind says.
type Effect struct {
	Kind  string
	Phase effects.Phase
	// When is the condition's source, "" for none.
	When string
	// Line and Column locate the effect in its file (1-based; 0 when made
	// in code).
	Line, Column int

	Trim    *TrimConfig
	Compact *CompactConfig
	Limits  *LimitsConfig

	when       *vm.Program
	needTokens bool
	// whenLine and whenColumn locate the condition's value in the file.
	whenLine, whenColumn int
}

// WhenEnv is what a when condition sees. The condition is an
// expr-lang expression (https://expr-lang.org) that must be a boolean; it is
// evaluated each time the effect would run, and the effect is skipped when
// it is false. A compact effect run to recover from a request rejected as
// too long (Step.ContextTooLong) runs whatever its condition.
//
//	tokens     int     the request's input tokens as it stands (Step.Tokens:
//	                   Budget.Fixed plus the messages); counted only when
//	                   the condition uses it
//	window     int     the context window (Budget.Window, else the file's
//	                   profile), 0 when unknown
//	step       int     the step number, from 0
//	cost       float   the run's cost so far in US dollars (Stats.Cost)
//	messages   int     the number of messages of the request
//	last_tool  string  the name of the last tool called, "" before any
//
// For example: `tokens > 0.6 * window`, `step >= 3 && last_tool == "search"`.
//
// A condition is bounded: Parse rejects one of more than WhenMaxNodes nodes
// or with a constant range of more than WhenMaxRange elements, and an
// evaluation that runs past Config.WhenTimeout, outlives the run's context,
// or builds a string longer than WhenMaxString fails the effect with a
// *WhenError naming the condition's file, line and column.
type WhenEnv struct {
	Tokens   int     `expr:"tokens"`
	Window   int     `expr:"window"`
	Step     int     `expr:"step"`
	Cost     float64 `expr:"cost"`
	Messages int     `expr:"messages"`
	LastTool string  `expr:"last_tool"`
}

// ConfigError is an error in a configuration file, at a line and column
// (1-based). It prints as file:line:col: message.
type ConfigError struct {
	File         string
	Line, Column int
	Msg          string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
}

// Load reads the configuration file at path; see Parse.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse reads a configuration from YAML data; name is the file name errors
// are reported against. The document is a mapping:
//
//	model: gpt-4o          # optional: the profile (see ProfileFor)
//	window: 32768          # optional: override the profile's window
//	reserve: 4096          # optional: override its output reserve
//	cached_input: 0.5      # optional: the profile's CachedInputFraction
//	when_timeout: 20ms     # optional: Config.WhenTimeout
//	effects:               # in registration order
//	  - kind: trim_tool_results
//	    params: {max_result_length: 400, preserve_recent: 3}
//	  - kind: compact
//	    params: {threshold: 0.75, strategy: summarize}
//	    when: step > 2
//	  - kind: limits
//	    params: {max_iterations: 40, max_cost: 2.5, max_time: 10m}
//
// The params of each kind are its config struct's fields in snake case
// (TrimConfig, CompactConfig, LimitsConfig; for compact also read_tools,
// modify_tools and arg_keys of FileTracking). A duration is a string like
// "90s" or a number of seconds. when is a condition over WhenEnv, compiled
// here.
//
// When the file names a model (or a window) and lists no effects, the
// effects are those of Defaults(profile).
//
// Unknown keys, kinds and params, values of the wrong type and bad
// conditions are *ConfigError values (all of them, joined with
// errors.Join).
func Parse(name string, data []byte) (*Config, error) {
	p := &parser{file: name}
	cfg := p.parse(data)
	if len(p.errs) > 0 {
		return nil, errors.Join(p.errs...)
	}
	return cfg, nil
}
