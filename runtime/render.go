package runtime

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/internal/canon"
	"github.com/reprompt/reprompt/internal/stepmods"
	"github.com/reprompt/reprompt/llm"
)

// renderer renders system prompts and tool lists, keeping what it rendered
// last: a prompt re-declares the same definitions at nearly every step, and
// a step whose system prompt or tool list is unchanged reuses the previous
// string or slice instead of building new ones.
type renderer struct {
	yaml  yamlCache
	buf   []byte
	sys   string         // the system prompt rendered last
	parts []sysPart      // what sys was rendered from
	spare []sysPart      // the parts of the render under way
	specs []llm.ToolSpec // the tool list rendered last (shared with requests: never modified)
	diff  sysDiff        // how the last system prompt rendered differs from the one before
	// stable keeps disabled tools in the tool list (Config.StableTools).
	stable bool
}

// sysPart is a system part or a variable as the system prompt shows it.
type sysPart struct {
	name, text string
	variable   bool
}

// system renders the enabled system parts in declaration order, then a
// <variables> block of the enabled variables. It returns "" when nothing is
// enabled.
func (rd *renderer) system(reg *defs.Registry, mods *stepmods.Mods) (string, error) {
	parts, err := rd.systemParts(reg, mods)
	if err != nil {
		return "", err
	}
	if rd.parts != nil && slices.Equal(parts, rd.parts) {
		rd.spare = parts[:0]
		rd.diff = sysDiff{}
		return rd.sys, nil
	}
	if rd.parts != nil {
		rd.diff = diffParts(rd.parts, parts)
	} else {
		rd.diff = sysDiff{}
	}
	b := rd.buf[:0]
	vars := 0
	for _, p := range parts {
		if !p.variable {
			if len(b) > 0 {
				b = append(b, "\n\n"...)
			}
			b = openTag(b, p.name)
			b = append(b, '\n')
			b = append(b, strings.TrimRight(p.text, "\n")...)
			b = append(b, '\n')
			b = closeTag(b, p.name)
			continue
		}
		if vars == 0 {
			if len(b) > 0 {
				b = append(b, "\n\n"...)
			}
			b = append(b, "<variables>\n"...)
		}
		vars++
		b = openTag(b, p.name)
		multiline := strings.Contains(p.text, "\n")
		if multiline {
			b = append(b, '\n')
		}
		b = append(b, p.text...)
		if multiline {
			b = append(b, '\n')
		}
		b = closeTag(b, p.name)
		b = append(b, '\n')
	}
	if vars > 0 {
		b = append(b, "</variables>"...)
	}
	rd.buf = b
	if string(b) != rd.sys {
		rd.sys = string(b)
	}
	rd.parts, rd.spare = parts, rd.parts[:0]
	return rd.sys, nil
}

// systemParts lists what the system prompt shows, in order: the enabled
// system parts, then the enabled variables with their texts, then the
// variables mods set that are not declared. It fills rd.spare.
func (rd *renderer) systemParts(reg *defs.Registry, mods *stepmods.Mods) ([]sysPart, error) {
	parts := rd.spare[:0]
	var buf [16]defs.Def // on the stack: copying definitions there needs no write barriers
	ds := reg.AppendEnabled(buf[:0], defs.KindSystem)
	for i := range ds {
		d := &ds[i]
		if mods.Systems != nil && !slices.Contains(mods.Systems, d.Name) {
			continue
		}
		parts = append(parts, sysPart{name: d.Name, text: d.Text})
	}
	overridden := func(name string) (any, bool) {
		for _, v := range mods.Variables {
			if v.Name == name {
				return v.Value, true
			}
		}
		return nil, false
	}
	ds = reg.AppendEnabled(buf[:0], defs.KindVariable)
	for i := range ds {
		d := &ds[i]
		var text string
		var err error
		if v, ok := overridden(d.Name); ok {
			text, err = valueText(d.Name, v)
		} else if d.IsData {
			text, err = rd.yaml.render(d.Name, d.Data)
		} else {
			text = d.Text
		}
		if err != nil {
			return nil, err
		}
		parts = append(parts, sysPart{name: d.Name, text: text, variable: true})
	}
	for _, v := range mods.Variables {
		if _, declared := reg.Lookup(defs.KindVariable, v.Name); declared {
			continue
		}
		text, err := valueText(v.Name, v.Value)
		if err != nil {
			return nil, err
		}
		parts = append(parts, sysPart{name: v.Name, text: text, variable: true})
	}
	rd.spare = parts
	return parts, nil
}

func openTag(b []byte, name string) []byte {
	b = append(b, '<')
	b = append(b, name...)
	return append(b, '>')
}

func closeTag(b []byte, name string) []byte {
	b = append(b, "</"...)
	b = append(b, name...)
	return append(b, '>')
}

// yamlCache keeps the YAML of each data variable with the value it was
// rendered from: a prompt re-declares its data at every step, usually
// unchanged, and YAML encoding is the costliest part of rendering. A value
// made of plain types (see plainCopy) is kept as a deep copy and compared
// without allocating; any other value is kept as its canonical encoding
// (effects.Encode).
type yamlCache struct {
	m map[string]yamlEntry
}

type yamlEntry struct {
	plain bool
	snap  any    // a deep copy of the value, when plain
	enc   string // the value's canonical encoding, when not plain
	text  string
}

func (c *yamlCache) render(name string, v any) (string, error) {
	if c == nil {
		return valueText(name, v)
	}
	e, ok := c.m[name]
	if ok && e.plain && plainEqual(e.snap, v, 0) {
		return e.text, nil
	}
	if c.m == nil {
		c.m = make(map[string]yamlEntry)
	}
	if !ok { // a first render in this run: maybe an earlier run's
		if se, hit := sharedYAML.lookup(name, v); hit {
			c.m[name] = se
			return se.text, nil
		}
	}
	snap, plain := plainCopy(v, 0)
	var enc string
	if !plain {
		enc = canon.Encode(v)
		if ok && !e.plain && e.enc == enc {
			return e.text, nil
		}
	}
	text, err := valueText(name, v)
	if err != nil {
		return "", err
	}
	e = yamlEntry{plain: plain, snap: snap, enc: enc, text: text}
	c.m[name] = e
	if plain && !ok { // only first renders are shared: a run's later changes are its own
		sharedYAML.store(name, e)
	}
	return text, nil
}

// sharedYAML keeps, across the runs of the process, the YAML of the plain
// value a run rendered first under each name (at most maxSharedYAML names): the
// runs of one agent declare the same data (a configuration, a profile),
// and a new run would otherwise encode it again at its first step. A plain
// entry's snapshot is a private deep copy, never modified, so runs share
// entries safely.
var sharedYAML = sharedYAMLCache{m: make(map[string]yamlEntry)}

const maxSharedYAML = 256

type sharedYAMLCache struct {
	mu sync.Mutex
	m  map[string]yamlEntry
}

func (c *sharedYAMLCache) lookup(name string, v any) (yamlEntry, bool) {
	c.mu.Lock()
	e, ok := c.m[name]
	c.mu.Unlock()
	if ok && plainEqual(e.snap, v, 0) {
		return e, true
	}
	return yamlEntry{}, false
}

func (c *sharedYAMLCache) store(name string, e yamlEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[name]; !ok && len(c.m) >= maxSharedYAML {
		clear(c.m) // crude, and rare: more data names than any agent has
	}
	c.m[name] = e
}

// maxPlainDepth bounds the nesting of a plain value, so that a value that
// contains itself is not plain.
const maxPlainDepth = 32

// plainCopy returns a deep copy of v if v is made only of the types
// decoded JSON and simple configuration use (nil, bool, string, the
// integer and float types, []any, map[string]any, and slices and
// string-keyed maps of strings, ints, float64 and bool), nested at most
// maxPlainDepth deep; ok is false otherwise. Named types are not plain.
func plainCopy(v any, depth int) (c any, ok bool) {
	if depth > maxPlainDepth {
		return nil, false
	}
	switch x := v.(type) {
	case nil, bool, string, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return x, true
	case []string:
		return cloneNil(x), true
	case []int:
		return cloneNil(x), true
	case []float64:
		return cloneNil(x), true
	case []bool:
		return cloneNil(x), true
	case map[string]string:
		return cloneMapNil(x), true
	case map[string]int:
		return cloneMapNil(x), true
	case map[string]float64:
		return cloneMapNil(x), true
	case map[string]bool:
		return cloneMapNil(x), true
	case []any:
		if x == nil {
			return x, true
		}
		out := make([]any, len(x))
		for i, e := range x {
			if out[i], ok = plainCopy(e, depth+1); !ok {
				return nil, false
			}
		}
		return out, true
	case map[string]any:
		if x == nil {
			return x, true
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			if out[k], ok = plainCopy(e, depth+1); !ok {
				return nil, false
			}
		}
		return out, true
	}
	return nil, false
}

func cloneNil[S ~[]E, E any](s S) S {
	if s == nil {
		return nil
	}
	return slices.Clone(s)
}

func cloneMapNil[M ~map[K]V, K comparable, V any](m M) M {
	if m == nil {
		return nil
	}
	return maps.Clone(m)
}

// plainEqual reports whether v has the same type and value as the plain
// copy snap, so that it renders to the same YAML: floats compare by their
// bits (0 and -0 differ, as their YAML does), nil and empty slices and maps
// differ. It does not allocate.
func plainEqual(snap, v any, depth int) bool {
	if depth > maxPlainDepth {
		return false
	}
	switch x := v.(type) {
	case nil:
		return snap == nil
	case bool, string, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return snap == v
	case float64:
		s, ok := snap.(float64)
		return ok && math.Float64bits(s) == math.Float64bits(x)
	case float32:
		s, ok := snap.(float32)
		return ok && math.Float32bits(s) == math.Float32bits(x)
	case []string:
		s, ok := snap.([]string)
		return ok && (s == nil) == (x == nil) && slices.Equal(s, x)
	case []int:
		s, ok := snap.([]int)
		return ok && (s == nil) == (x == nil) && slices.Equal(s, x)
	case []bool:
		s, ok := snap.([]bool)
		return ok && (s == nil) == (x == nil) && slices.Equal(s, x)
	case []float64:
		s, ok := snap.([]float64)
		return ok && (s == nil) == (x == nil) && slices.EqualFunc(s, x, sameFloat)
	case map[string]string:
		s, ok := snap.(map[string]string)
		return ok && (s == nil) == (x == nil) && maps.Equal(s, x)
	case map[string]int:
		s, ok := snap.(map[string]int)
		return ok && (s == nil) == (x == nil) && maps.Equal(s, x)
	case map[string]bool:
		s, ok := snap.(map[string]bool)
		return ok && (s == nil) == (x == nil) && maps.Equal(s, x)
	case map[string]float64:
		s, ok := snap.(map[string]float64)
		return ok && (s == nil) == (x == nil) && maps.EqualFunc(s, x, sameFloat)
	case []any:
		s, ok := snap.([]any)
		if !ok || (s == nil) != (x == nil) || len(s) != len(x) {
			return false
		}
		for i := range x {
			if !plainEqual(s[i], x[i], depth+1) {
				return false
			}
		}
		return true
	case map[string]any:
		s, ok := snap.(map[string]any)
		if !ok || (s == nil) != (x == nil) || len(s) != len(x) {
			return false
		}
		for k, e := range x {
			se, ok := s[k]
			if !ok || !plainEqual(se, e, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

func sameFloat(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

// valueText renders a variable value: a string as is, anything else as the
// YAML form of its JSON encoding. The value is encoded with encoding/json
// (so json tags rename and omit fields, omitempty holds, MarshalJSON and
// MarshalText are used, as for state and tool arguments), and that JSON is
// written as block-style YAML with the same keys in the same order: struct
// fields in declaration order, map keys sorted, as encoding/json writes
// them. The bytes are therefore stable from step to step, which prompt
// caching needs. A value JSON cannot encode (a func, a channel, a cycle) is
// an error naming the variable.
func valueText(name string, v any) (text string, err error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	var js bytes.Buffer
	enc := json.NewEncoder(&js)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("variable %q cannot be rendered: %w", name, err)
	}
	dec := json.NewDecoder(&js)
	dec.UseNumber()
	node, err := jsonNode(dec, 0)
	if err != nil {
		return "", fmt.Errorf("variable %q cannot be rendered as YAML: %w", name, err)
	}
	defer func() {
		if p := recover(); p != nil {
			text, err = "", fmt.Errorf("variable %q cannot be rendered as YAML: %v", name, p)
		}
	}()
	out, err := yaml.Marshal(node)
	if err != nil {
		return "", fmt.Errorf("variable %q cannot be rendered as YAML: %w", name, err)
	}
	return strings.TrimSuffix(string(out), "\n"), nil // one: a kept final line break (|+) is part of the value
}

// maxJSONDepth bounds the nesting jsonNode follows; encoding/json stops at
// the same depth.
const maxJSONDepth = 10000

// jsonNode reads one JSON value from dec as a YAML node, keeping the order
// of object keys. Strings are tagged as strings, so that the encoder quotes
// one that would read as another type (and escapes control characters);
// numbers, booleans and null are written as JSON wrote them.
func jsonNode(dec *json.Decoder, depth int) (*yaml.Node, error) {
	if depth > maxJSONDepth {
		return nil, fmt.Errorf("nested deeper than %d", maxJSONDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		n := &yaml.Node{Kind: yaml.MappingNode}
		if t == '[' {
			n.Kind = yaml.SequenceNode
		}
		for dec.More() {
			if n.Kind == yaml.MappingNode {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, _ := k.(string)
				n.Content = append(n.Content, strNode(key))
			}
			c, err := jsonNode(dec, depth+1)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, c)
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
		return n, nil
	case string:
		return strNode(t), nil
	case json.Number:
		return &yaml.Node{Kind: yaml.ScalarNode, Value: t.String()}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Value: strconv.FormatBool(t)}, nil
	default: // nil
		return &yaml.Node{Kind: yaml.ScalarNode, Value: "null"}, nil
	}
}

// strNode returns a string scalar. The encoder quotes it when it would read
// as another type; the YAML 1.1 booleans (yes, off, …), which it quotes in
// a Go string but not in a node, are quoted here.
func strNode(s string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	if oldBool(s) {
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

func oldBool(s string) bool {
	switch s {
	case "y", "Y", "yes", "Yes", "YES", "on", "On", "ON",
		"n", "N", "no", "No", "NO", "off", "Off", "OFF":
		return true
	}
	return false
}

// tools returns the enabled tools (with rd.stable, the disabled ones too),
// in declaration order, allowed by the step's LimitTools. The slice is the
// previous step's when nothing changed: it is shared by requests and never
// modified.
func (rd *renderer) tools(reg *defs.Registry, mods *stepmods.Mods) []llm.ToolSpec {
	prev := rd.specs
	var out []llm.ToolSpec
	n := 0               // tools so far; out is nil while they match prev
	var buf [16]defs.Def // on the stack, as in systemParts
	var ds []defs.Def
	if rd.stable {
		ds = appendDeclared(buf[:0], reg)
	} else {
		ds = reg.AppendEnabled(buf[:0], defs.KindTool)
	}
	for i := range ds {
		d := &ds[i]
		if mods.Tools != nil && !slices.Contains(mods.Tools, d.Name) {
			continue
		}
		t := llm.ToolSpec{Name: d.Name, Description: d.Tool.Description, Parameters: d.Tool.Schema}
		if out == nil && n < len(prev) && sameSpec(prev[n], t) {
			n++
			continue
		}
		if out == nil {
			out = append(make([]llm.ToolSpec, 0, max(len(prev), n+1)), prev[:n]...)
		}
		out = append(out, t)
		n++
	}
	switch {
	case out != nil:
		rd.specs = out
	case n == 0:
		return nil
	case n < len(prev):
		rd.specs = prev[:n:n]
	}
	return rd.specs
}

// appendDeclared appends the declared tools, disabled or not, to dst.
func appendDeclared(dst []defs.Def, reg *defs.Registry) []defs.Def {
	for d := range reg.Collection(defs.KindTool).All() {
		dst = append(dst, d)
	}
	return dst
}

// sameSpec reports whether a and b are the same tool, comparing the schemas
// by identity first (a declared tool's schema is cached per argument type).
func sameSpec(a, b llm.ToolSpec) bool {
	if a.Name != b.Name || a.Description != b.Description || len(a.Parameters) != len(b.Parameters) {
		return false
	}
	return len(a.Parameters) == 0 || &a.Parameters[0] == &b.Parameters[0] || string(a.Parameters) == string(b.Parameters)
}

// reminderMessage returns the user-role message naming the reminded
// definitions.
func reminderMessage(refs []defs.Ref) defs.Message {
	var b strings.Builder
	b.WriteString("<reminder>\nKeep these in mind for your next action:\n")
	for _, r := range refs {
		fmt.Fprintf(&b, "- <%s> (%s)\n", r.Name, r.Kind)
	}
	b.WriteString("</reminder>")
	return defs.Message{Role: defs.RoleUser, Content: b.String(), Meta: map[string]string{"reminder": "true"}}
}
