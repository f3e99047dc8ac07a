package builtin

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr/file"
	"go.yaml.in/yaml/v3"

	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/effects/builtin/internal/when"
)

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
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if p.duplicate(seen, k, "") {
			continue
		}
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
	var kind, params, cond *yaml.Node
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if p.duplicate(seen, k, fmt.Sprintf("effect %d: ", index)) {
			return e, false
		}
		switch k.Value {
		case "kind":
			kind = v
		case "params":
			params = v
		case "when":
			cond = v
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
		seen := map[string]bool{}
		for i := 0; i+1 < len(params.Content); i += 2 {
			k, v := params.Content[i], params.Content[i+1]
			if p.duplicate(seen, k, e.Kind+": ") {
				ok = false
				continue
			}
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
	if cond != nil {
		var src string
		if !p.str(cond, "when", &src) {
			return e, false
		}
		prog, err := when.Compile(src)
		if err != nil {
			line, col := cond.Line, cond.Column
			msg := err.Error()
			var fe *file.Error
			if errors.As(err, &fe) {
				msg = fe.Message
				switch cond.Style {
				case yaml.LiteralStyle, yaml.FoldedStyle:
					line, col = cond.Line+fe.Line, cond.Column+2+fe.Column
				case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
					line, col = cond.Line+fe.Line-1, cond.Column+1+fe.Column
				default:
					line, col = cond.Line+fe.Line-1, cond.Column+fe.Column
				}
				if fe.Line > 1 {
					col = fe.Column + 1
				}
			}
			p.errs = append(p.errs, &ConfigError{File: p.file, Line: line, Column: col, Msg: "when: " + msg})
			return e, false
		}
		e.When, e.when, e.needTokens = src, prog, when.Uses(prog, "tokens")
		e.whenLine, e.whenColumn = cond.Line, cond.Column
	}
	return e, ok
}

// duplicate reports a key already seen in its mapping as a *ConfigError:
// YAML forbids it, and the parser would otherwise keep the last value and
// silently drop the first (a whole effects list, say).
func (p *parser) duplicate(seen map[string]bool, k *yaml.Node, prefix string) bool {
	if !seen[k.Value] {
		seen[k.Value] = true
		return false
	}
	p.errorf(k, "%sduplicate key %q", prefix, k.Value)
	return true
}

func sortedFieldNames(m map[string]func(*yaml.Node, string) bool) []string {
	return slices.Sorted(maps.Keys(m))
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
