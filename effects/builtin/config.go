package builtin

import (
	"context"
	"fmt"
	goruntime "runtime"
	"strconv"
	"sync"
	"time"
	"weak"

	"github.com/expr-lang/expr/vm"

	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/effects/builtin/internal/when"
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

// Register registers the configured effects in p, each in its phase and
// under the key "kind#index" (so a when condition or an effect registered
// conditionally around them does not shift their memory): the compact
// effects first, since their commit would drop the views of effects run
// before them (the wrap-up message of limits), then the others, in file
// order. Compact effects are registered with effects.Recovery(), so they run
// when the provider rejects a request as too long. Call it from the prompt function,
// at every execution, like any hook; register one Config once per prompt
// (the keys would clash).
//
// The effects are built once per prompt and reused across its executions,
// so they keep what they know of the transcript; a compact effect keeps its
// circuit breaker in p's state (key DefaultStateKey + "#index").
func (c *Config) Register(p *prompt.Prompt) {
	if c == nil {
		return
	}
	fns := c.instances(p)
	// Compaction commits, which drops the views made before it in the same
	// step (the wrap-up of limits): compact effects go first.
	for _, compact := range []bool{true, false} {
		for i := range c.Effects {
			e := &c.Effects[i]
			if (e.Kind == KindCompact) != compact {
				continue
			}
			opts := []effects.Option{effects.Key(e.Kind + "#" + strconv.Itoa(i)), effects.InPhase(e.Phase)}
			if compact {
				opts = append(opts, effects.Recovery())
			}
			p.Effect(effects.Always, fns[i], opts...)
		}
	}
}

func (c *Config) instances(p *prompt.Prompt) []effects.Func {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := weak.Make(p)
	if fns, ok := c.inst[key]; ok && len(fns) == len(c.Effects) {
		return fns
	}
	if c.inst == nil {
		c.inst = make(map[weak.Pointer[prompt.Prompt]][]effects.Func)
	}
	fns := make([]effects.Func, len(c.Effects))
	for i := range c.Effects {
		fns[i] = c.build(i, p)
	}
	c.inst[key] = fns
	goruntime.AddCleanup(p, func(k weak.Pointer[prompt.Prompt]) {
		c.mu.Lock()
		delete(c.inst, k)
		c.mu.Unlock()
	}, key)
	return fns
}

// build makes the effect of c.Effects[i] for prompt p.
func (c *Config) build(i int, p *prompt.Prompt) effects.Func {
	e := &c.Effects[i]
	var fn effects.Func
	switch {
	case e.Trim != nil:
		fn = TrimToolResults(*e.Trim)
	case e.Compact != nil:
		cc := *e.Compact
		if cc.State == nil && p != nil {
			cc.State = p.Store()
			if cc.StateKey == "" {
				cc.StateKey = DefaultStateKey + "#" + strconv.Itoa(i)
			}
		}
		if cc.OnCompaction == nil {
			cc.OnCompaction = c.OnCompaction
		}
		if cc.Window == 0 && c.Profile.EffectiveWindow() > 0 {
			// The effect's own reserve param, if any, wins over the profile's.
			cc.Window = c.Profile.EffectiveWindow()
			if cc.Reserve == 0 {
				cc.Reserve = c.Profile.OutputReserve
			}
		}
		fn = Compact(cc)
	case e.Limits != nil:
		fn = Limits(*e.Limits)
	default:
		return func(context.Context, *effects.Step) error {
			return fmt.Errorf("effect %d has no configuration for kind %q", i, e.Kind)
		}
	}
	if e.when == nil && e.When != "" {
		prog, err := when.Compile(e.When)
		if err != nil {
			werr := &WhenError{File: c.File, Line: e.Line, Column: e.Column, When: e.When, Err: err}
			return func(context.Context, *effects.Step) error { return werr }
		}
		e.when, e.needTokens = prog, when.Uses(prog, "tokens")
	}
	if e.when == nil {
		return fn
	}
	prog, needTokens, window := e.when, e.needTokens, c.Profile.EffectiveWindow()
	limit := c.WhenTimeout
	if limit <= 0 {
		limit = DefaultWhenTimeout
	}
	line, col := e.whenLine, e.whenColumn
	if line == 0 {
		line, col = e.Line, e.Column
	}
	return func(ctx context.Context, s *effects.Step) error {
		if s.ContextTooLong {
			return fn(ctx, s) // recovering from a rejected request: no condition
		}
		env := WhenEnv{Window: s.Budget.Window, Step: s.Number, Cost: s.Stats.Cost, Messages: len(s.Messages())}
		if env.Window == 0 {
			env.Window = window
		}
		if needTokens {
			env.Tokens = s.Tokens()
		}
		if s.LastTool != nil {
			env.LastTool = s.LastTool.Name
		}
		ok, err := when.Eval(ctx, prog, when.Env(env), limit)
		if err != nil {
			return &WhenError{File: c.File, Line: line, Column: col, When: e.When, Limit: limit, Err: err}
		}
		if !ok {
			return nil
		}
		return fn(ctx, s)
	}
}
