package runtime

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
)

// renderSystem renders the enabled system parts in declaration order, then a
// <variables> block of the enabled variables. It returns "" when nothing is
// enabled.
func renderSystem(reg *defs.Registry, mods *effects.Mods, cache *yamlCache) (string, error) {
	var b strings.Builder
	for d := range reg.Collection(defs.KindSystem).Enabled() {
		if mods.Systems != nil && !slices.Contains(mods.Systems, d.Name) {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		openTag(&b, d.Name)
		b.WriteByte('\n')
		b.WriteString(strings.TrimRight(d.Text, "\n"))
		b.WriteByte('\n')
		closeTag(&b, d.Name)
	}
	vars := 0
	writeVar := func(name string, text string) {
		if vars == 0 {
			if b.Len() > 0 {
				b.WriteString("\n\n")
			}
			b.WriteString("<variables>\n")
		}
		vars++
		openTag(&b, name)
		multiline := strings.Contains(text, "\n")
		if multiline {
			b.WriteByte('\n')
		}
		b.WriteString(text)
		if multiline {
			b.WriteByte('\n')
		}
		closeTag(&b, name)
		b.WriteByte('\n')
	}
	overridden := func(name string) (any, bool) {
		for _, v := range mods.Variables {
			if v.Name == name {
				return v.Value, true
			}
		}
		return nil, false
	}
	for d := range reg.Collection(defs.KindVariable).Enabled() {
		var text string
		var err error
		if v, ok := overridden(d.Name); ok {
			text, err = valueText(d.Name, v)
		} else if d.IsData {
			text, err = cache.render(d.Name, d.Data)
		} else {
			text = d.Text
		}
		if err != nil {
			return "", err
		}
		writeVar(d.Name, text)
	}
	for _, v := range mods.Variables {
		if _, declared := reg.Lookup(defs.KindVariable, v.Name); declared {
			continue
		}
		text, err := valueText(v.Name, v.Value)
		if err != nil {
			return "", err
		}
		writeVar(v.Name, text)
	}
	if vars > 0 {
		b.WriteString("</variables>")
	}
	return b.String(), nil
}

func openTag(b *strings.Builder, name string) {
	b.WriteByte('<')
	b.WriteString(name)
	b.WriteByte('>')
}

func closeTag(b *strings.Builder, name string) {
	b.WriteString("</")
	b.WriteString(name)
	b.WriteByte('>')
}

// yamlCache keeps the YAML of each data variable with the canonical encoding
// of the value it was rendered from: a prompt re-declares its data at every
// step, usually unchanged, and YAML encoding is the costliest part of
// rendering.
type yamlCache struct {
	m map[string]yamlEntry
}

type yamlEntry struct{ enc, text string }

func (c *yamlCache) render(name string, v any) (string, error) {
	if c == nil {
		return valueText(name, v)
	}
	enc := effects.Encode(v)
	if e, ok := c.m[name]; ok && e.enc == enc {
		return e.text, nil
	}
	text, err := valueText(name, v)
	if err != nil {
		return "", err
	}
	if c.m == nil {
		c.m = make(map[string]yamlEntry)
	}
	c.m[name] = yamlEntry{enc, text}
	return text, nil
}

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

// renderTools returns the enabled tools, in declaration order, allowed by
// the step's LimitTools.
func renderTools(reg *defs.Registry, mods *effects.Mods) []ToolSpec {
	var out []ToolSpec
	for d := range reg.Collection(defs.KindTool).Enabled() {
		if mods.Tools != nil && !slices.Contains(mods.Tools, d.Name) {
			continue
		}
		out = append(out, ToolSpec{Name: d.Name, Description: d.Tool.Description, Parameters: d.Tool.Schema})
	}
	return out
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
