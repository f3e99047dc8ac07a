package builtin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"time"
	"weak"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"
	"go.yaml.in/yaml/v3"

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

type parser struct {
	file string
	errs []error
}

func (p *parser) errorf(n *yaml.Node, format string, args ...any) {
	line, col := 1, 1
	if n != nil {
		line, col = n.Line, n.Column
	}
	p.errs = append(p.errs, &ConfigError{File: p.file, Line: line, Column: col, Msg: fmt.Sprintf(format, args...)})
}

var yamlLine = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)

func (p *parser) parse(data []byte) *Config {
	cfg := &Config{File: p.file}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		line, msg := 1, err.Error()
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			if m[1] != "" {
				line, _ = strconv.Atoi(m[1])
			}
			msg = m[2]
		}
		p.errs = append(p.errs, &ConfigError{File: p.file, Line: line, Column: 1, Msg: msg})
		return nil
	}
	if len(doc.Content) == 0 {
		return cfg // an empty file: no effects
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		p.errorf(root, "want a mapping with an effects list, got %s", describe(root))
		return nil
	}
	var model, window, reserve, cached, whenTimeout *yaml.Node
	var list *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "model":
			model = v
		case "window":
			window = v
		case "reserve":
			reserve = v
		case "cached_input":
			cached = v
		case "when_timeout":
			whenTimeout = v
		case "effects":
			list = v
		default:
			p.errorf(k, "unknown key %q (want model, window, reserve, cached_input, when_timeout or effects)", k.Value)
		}
	}
	if model != nil {
		var name string
		if p.str(model, "model", &name) {
			cfg.Profile = ProfileFor(name)
			if cfg.Profile.EffectiveWindow() == 0 && window == nil {
				p.errorf(model, "unknown model %q: give its window", name)
			}
		}
	}
	if window != nil {
		p.nonNegInt(window, "window", &cfg.Profile.Window)
	}
	if reserve != nil {
		p.nonNegInt(reserve, "reserve", &cfg.Profile.OutputReserve)
	}
	if cached != nil {
		var f float64
		if p.number(cached, "cached_input", &f) {
			if f > 1 {
				p.errorf(cached, "cached_input: want a fraction of the input price in [0, 1], got %s", cached.Value)
			} else {
				cfg.Profile.CachedInputFraction = f
			}
		}
	}
	if whenTimeout != nil {
		p.duration(whenTimeout, "when_timeout", &cfg.WhenTimeout)
	}
	if list != nil {
		switch list.Kind {
		case yaml.SequenceNode:
			for i, item := range list.Content {
				if e, ok := p.effect(i, item); ok {
					cfg.Effects = append(cfg.Effects, e)
				}
			}
		case yaml.ScalarNode:
			if list.Tag != "!!null" {
				p.errorf(list, "effects: want a list, got %s", describe(list))
			}
		default:
			p.errorf(list, "effects: want a list, got %s", describe(list))
		}
	}
	if (list == nil || len(list.Content) == 0) && cfg.Profile.EffectiveWindow() > 0 {
		d := Defaults(cfg.Profile)
		cfg.Effects = d.Effects
	}
	return cfg
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	switch n.Tag {
	case "!!str":
		return strconv.Quote(n.Value)
	case "!!null":
		return "null"
	}
	return fmt.Sprintf("%s %s", strings.TrimPrefix(n.Tag, "!!"), n.Value)
}

func (p *parser) effect(index int, n *yaml.Node) (Effect, bool) {
	e := Effect{Line: n.Line, Column: n.Column}
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "effect %d: want a mapping with kind, params and when, got %s", index, describe(n))
		return e, false
	}
	var kind, params, when *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "kind":
			kind = v
		case "params":
			params = v
		case "when":
			when = v
		default:
			p.errorf(k, "effect %d: unknown key %q (want kind, params or when)", index, k.Value)
		}
	}
	if kind == nil {
		p.errorf(n, "effect %d: kind is missing", index)
		return e, false
	}
	if !p.str(kind, "kind", &e.Kind) {
		return e, false
	}
	var fields map[string]func(*yaml.Node, string) bool
	switch e.Kind {
	case KindTrimToolResults:
		e.Phase = effects.AfterReply
		e.Trim = &TrimConfig{}
		fields = p.trimFields(e.Trim)
	case KindCompact:
		e.Phase = effects.BeforeCall
		e.Compact = &CompactConfig{}
		fields = p.compactFields(e.Compact)
	case KindLimits:
		e.Phase = effects.BeforeCall
		e.Limits = &LimitsConfig{}
		fields = p.limitsFields(e.Limits)
	default:
		p.errorf(kind, "unknown effect kind %q (want %s, %s or %s)", e.Kind, KindTrimToolResults, KindCompact, KindLimits)
		return e, false
	}
	ok := true
	if params != nil && !(params.Kind == yaml.ScalarNode && params.Tag == "!!null") {
		if params.Kind != yaml.MappingNode {
			p.errorf(params, "%s: params: want a mapping, got %s", e.Kind, describe(params))
			return e, false
		}
		for i := 0; i+1 < len(params.Content); i += 2 {
			k, v := params.Content[i], params.Content[i+1]
			set, known := fields[k.Value]
			if !known {
				p.errorf(k, "%s: unknown param %q (want one of %s)", e.Kind, k.Value, strings.Join(sortedFieldNames(fields), ", "))
				ok = false
				continue
			}
			if !set(v, k.Value) {
				ok = false
			}
		}
	}
	if when != nil {
		var src string
		if !p.str(when, "when", &src) {
			return e, false
		}
		prog, err := compileWhen(src)
		if err != nil {
			line, col := when.Line, when.Column
			msg := err.Error()
			var fe *file.Error
			if errors.As(err, &fe) {
				msg = fe.Message
				switch when.Style {
				case yaml.LiteralStyle, yaml.FoldedStyle:
					line, col = when.Line+fe.Line, when.Column+2+fe.Column
				case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
					line, col = when.Line+fe.Line-1, when.Column+1+fe.Column
				default:
					line, col = when.Line+fe.Line-1, when.Column+fe.Column
				}
				if fe.Line > 1 {
					col = fe.Column + 1
				}
			}
			p.errs = append(p.errs, &ConfigError{File: p.file, Line: line, Column: col, Msg: "when: " + msg})
			return e, false
		}
		e.When, e.when, e.needTokens = src, prog, usesIdent(prog, "tokens")
		e.whenLine, e.whenColumn = when.Line, when.Column
	}
	return e, ok
}

func usesIdent(prog *vm.Program, name string) bool {
	return ast.Find(prog.Node(), func(n ast.Node) bool {
		id, ok := n.(*ast.IdentifierNode)
		return ok && id.Value == name
	}) != nil
}

func sortedFieldNames(m map[string]func(*yaml.Node, string) bool) []string {
	keys := make(map[string]bool, len(m))
	for k := range m {
		keys[k] = true
	}
	return sortedKeys(keys)
}

// Typed param setters: each reports a *ConfigError at the value and returns
// false when the value has the wrong type or range.

func (p *parser) str(n *yaml.Node, name string, dst *string) bool {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		p.errorf(n, "%s: want a string, got %s", name, describe(n))
		return false
	}
	*dst = n.Value
	return true
}

func (p *parser) integer(n *yaml.Node, name string, dst *int) bool {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		p.errorf(n, "%s: want an integer, got %s", name, describe(n))
		return false
	}
	v, err := strconv.ParseInt(n.Value, 0, 64)
	if err != nil || v > math.MaxInt32 || v < math.MinInt32 {
		p.errorf(n, "%s: integer %s out of range", name, n.Value)
		return false
	}
	*dst = int(v)
	return true
}

func (p *parser) nonNegInt(n *yaml.Node, name string, dst *int) bool {
	var v int
	if !p.integer(n, name, &v) {
		return false
	}
	if v < 0 {
		p.errorf(n, "%s: want a number ≥ 0, got %d", name, v)
		return false
	}
	*dst = v
	return true
}

func (p *parser) number(n *yaml.Node, name string, dst *float64) bool {
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!float" && n.Tag != "!!int") {
		p.errorf(n, "%s: want a number, got %s", name, describe(n))
		return false
	}
	v, err := strconv.ParseFloat(n.Value, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		p.errorf(n, "%s: want a finite number ≥ 0, got %s", name, n.Value)
		return false
	}
	*dst = v
	return true
}

func (p *parser) fraction(n *yaml.Node, name string, dst *float64) bool {
	var v float64
	if !p.number(n, name, &v) {
		return false
	}
	if v <= 0 || v > 1 {
		p.errorf(n, "%s: want a fraction in (0, 1], got %s", name, n.Value)
		return false
	}
	*dst = v
	return true
}

func (p *parser) duration(n *yaml.Node, name string, dst *time.Duration) bool {
	if n.Kind == yaml.ScalarNode && (n.Tag == "!!int" || n.Tag == "!!float") {
		var secs float64
		if !p.number(n, name, &secs) {
			return false
		}
		if secs < 0 || secs > float64(math.MaxInt64/int64(time.Second)) {
			p.errorf(n, "%s: want a number of seconds between 0 and %d, got %s", name, math.MaxInt64/int64(time.Second), n.Value)
			return false
		}
		*dst = time.Duration(secs * float64(time.Second))
		return true
	}
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		p.errorf(n, "%s: want a duration like \"90s\" or a number of seconds, got %s", name, describe(n))
		return false
	}
	d, err := time.ParseDuration(n.Value)
	if err != nil || d < 0 {
		p.errorf(n, "%s: want a duration like \"90s\" or a number of seconds, got %q", name, n.Value)
		return false
	}
	*dst = d
	return true
}

func (p *parser) stringList(n *yaml.Node, name string, dst *[]string) bool {
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, "%s: want a list of strings, got %s", name, describe(n))
		return false
	}
	out := make([]string, 0, len(n.Content))
	for _, c := range n.Content {
		var s string
		if !p.str(c, name, &s) {
			return false
		}
		out = append(out, s)
	}
	*dst = out
	return true
}

func (p *parser) strategy(n *yaml.Node, name string, dst *Strategy, fallback bool) bool {
	var s string
	if !p.str(n, name, &s) {
		return false
	}
	st := Strategy(s)
	if !st.valid() || st == "" || (fallback && st == StrategySummarize) {
		want := "summarize, truncate, window or heuristic"
		if fallback {
			want = "truncate, window or heuristic"
		}
		p.errorf(n, "%s: unknown strategy %q (want %s)", name, s, want)
		return false
	}
	*dst = st
	return true
}

type setter = func(*yaml.Node, string) bool

func (p *parser) intField(dst *int) setter {
	return func(n *yaml.Node, name string) bool { return p.nonNegInt(n, name, dst) }
}

func (p *parser) trimFields(c *TrimConfig) map[string]setter {
	return map[string]setter{
		"max_result_length": p.intField(&c.MaxResultLength),
		"preserve_recent":   func(n *yaml.Node, name string) bool { return p.integer(n, name, &c.PreserveRecent) },
		"min_saving":        func(n *yaml.Node, name string) bool { return p.integer(n, name, &c.MinSaving) },
		"batch":             p.intField(&c.Batch),
		"preserve_turns":    p.intField(&c.PreserveTurns),
	}
}

func (p *parser) compactFields(c *CompactConfig) map[string]setter {
	return map[string]setter{
		"threshold":            func(n *yaml.Node, name string) bool { return p.fraction(n, name, &c.Threshold) },
		"target":               func(n *yaml.Node, name string) bool { return p.fraction(n, name, &c.Target) },
		"window":               p.intField(&c.Window),
		"reserve":              p.intField(&c.Reserve),
		"keep_recent_tokens":   p.intField(&c.KeepRecentTokens),
		"window_messages":      p.intField(&c.WindowMessages),
		"trim_recent":          p.intField(&c.TrimRecent),
		"max_result_length":    p.intField(&c.MaxResultLength),
		"summary_input_tokens": p.intField(&c.SummaryInputTokens),
		"summary_max_tokens":   p.intField(&c.SummaryMaxTokens),
		"max_failures":         p.intField(&c.MaxFailures),
		"strategy":             func(n *yaml.Node, name string) bool { return p.strategy(n, name, &c.Strategy, false) },
		"fallback":             func(n *yaml.Node, name string) bool { return p.strategy(n, name, &c.Fallback, true) },
		"system_prompt":        func(n *yaml.Node, name string) bool { return p.str(n, name, &c.SystemPrompt) },
		"state_key":            func(n *yaml.Node, name string) bool { return p.str(n, name, &c.StateKey) },
		"read_tools":           func(n *yaml.Node, name string) bool { return p.stringList(n, name, &c.Files.ReadTools) },
		"modify_tools":         func(n *yaml.Node, name string) bool { return p.stringList(n, name, &c.Files.ModifyTools) },
		"arg_keys":             func(n *yaml.Node, name string) bool { return p.stringList(n, name, &c.Files.ArgKeys) },
	}
}

func (p *parser) limitsFields(c *LimitsConfig) map[string]setter {
	return map[string]setter{
		"max_iterations": p.intField(&c.MaxIterations),
		"max_tokens":     p.intField(&c.MaxTokens),
		"max_cost":       func(n *yaml.Node, name string) bool { return p.number(n, name, &c.MaxCost) },
		"max_time":       func(n *yaml.Node, name string) bool { return p.duration(n, name, &c.MaxTime) },
		"warn":           func(n *yaml.Node, name string) bool { return p.fraction(n, name, &c.Warn) },
		"wrap_up":        func(n *yaml.Node, name string) bool { return p.str(n, name, &c.WrapUp) },
	}
}

// Defaults returns the effects that apply when a model's window is known and
// nothing is configured: trim_tool_results and compact with the window and
// reserve of profile, compacting at a threshold picked by the profile's
// cached-input price (DefaultsThreshold).
//
// The defaults are tuned for prompt caches. A tool result is trimmed (to
// its first 600 bytes) as soon as the model has answered after reading it
// in full (PreserveTurns 1, Batch 1): the rewrite then starts just before
// the model's latest reply, which no provider had cached yet, so trimming
// breaks almost none of the cached prefix, while a moving "keep the last
// four results" boundary re-sends several full results at every step.
// Compaction (a summary by the model) starts well before the window is
// full: the cached prefix is billed at every step, so a long history costs
// at every step, and a summary costs only its input once; the dearer cached
// input is, the earlier it pays to compact.
//
// On the simulated 320-step session of examples/longsession (32k window,
// 4k reserve, summaries billed), against a baseline that trims with a
// moving boundary at every step and compacts at CompactConfig's default
// threshold, this bills 0.48 to 0.52 of the baseline's input at a cached
// price of 0.1 and 0.46 to 0.52 at 0.5 (seeds 1 to 5), less than any of
// the rule-based compactions, and every tool result reaches the model in
// full before it is trimmed or summarised. The price of compacting early:
// the model knows older turns only from the summary sooner (12 to 16
// summaries in those 320 steps, against 6 at 0.8); set a higher
// CompactConfig.Threshold when a longer verbatim history matters more than
// the bill. For a Local profile results keep
// 300 bytes and compaction starts at 0.7 (the last 4 messages left alone
// by its trimming): a local model bills nothing. A profile with no window
// gives a Config with no effects.
func Defaults(profile Profile) *Config {
	cfg := &Config{File: "defaults", Profile: profile}
	w := profile.EffectiveWindow()
	if w == 0 {
		return cfg
	}
	trim := &TrimConfig{PreserveTurns: 1, Batch: 1, MaxResultLength: 600}
	compact := &CompactConfig{Window: w, Reserve: profile.OutputReserve, Threshold: DefaultsThreshold(profile.CachedInputFraction)}
	if profile.Local {
		trim.MaxResultLength = 300
		compact.Threshold, compact.TrimRecent, compact.MaxResultLength = 0.7, 4, 300
	}
	cfg.Effects = []Effect{
		{Kind: KindTrimToolResults, Phase: effects.AfterReply, Trim: trim},
		{Kind: KindCompact, Phase: effects.BeforeCall, Compact: compact},
	}
	return cfg
}

// DefaultsThreshold returns the compaction threshold of Defaults (a
// fraction of the usable window) for a cached-input price, as a fraction
// of the fresh input price: 0.45 up to 0.1, 0.4 from 0.5 on, in proportion
// between. Zero means DefaultCachedInputFraction.
//
// Measured on examples/longsession: at 0.1, compacting below 0.45 saves
// nothing more (the summaries' input grows as fast as the requests
// shrink); at 0.5 every step of the cached history costs five times more,
// and compacting earlier keeps paying.
func DefaultsThreshold(cachedInputFraction float64) float64 {
	p := cachedInputFraction
	if p <= 0 {
		p = DefaultCachedInputFraction
	}
	const lo, hi = 0.1, 0.5
	const atLo, atHi = 0.45, 0.4
	switch {
	case p <= lo:
		return atLo
	case p >= hi:
		return atHi
	}
	return atLo + (p-lo)/(hi-lo)*(atHi-atLo)
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
			cc.Window, cc.Reserve = c.Profile.EffectiveWindow(), c.Profile.OutputReserve
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
		prog, err := compileWhen(e.When)
		if err != nil {
			werr := &WhenError{File: c.File, Line: e.Line, Column: e.Column, When: e.When, Err: err}
			return func(context.Context, *effects.Step) error { return werr }
		}
		e.when, e.needTokens = prog, usesIdent(prog, "tokens")
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
		ok, err := evalWhen(ctx, prog, env, limit)
		if err != nil {
			return &WhenError{File: c.File, Line: line, Column: col, When: e.When, Limit: limit, Err: err}
		}
		if !ok {
			return nil
		}
		return fn(ctx, s)
	}
}
