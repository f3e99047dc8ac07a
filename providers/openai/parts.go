package openai

import (
	"bytes"
	"encoding/json"
	"strings"
)

// contentPart is one part of a message content sent as an array of parts
// instead of a string: {"type":"text","text":…}, or Mistral's reasoning
// models' {"type":"thinking","thinking":[{"type":"text","text":…}]}.
type contentPart struct {
	Type     string        `json:"type"`
	Text     string        `json:"text"`
	Thinking []contentPart `json:"thinking"`
}

// partsText joins the text of parts, and the text of their thinking parts.
func partsText(parts []contentPart) (text, thinking string) {
	var t, r strings.Builder
	for _, p := range parts {
		switch p.Type {
		case "text", "":
			t.WriteString(p.Text)
		case "thinking":
			sub, subThinking := partsText(p.Thinking)
			r.WriteString(sub)
			r.WriteString(subThinking)
		}
	}
	return t.String(), r.String()
}

// flattenContentParts rewrites a response or chunk whose choices have a
// message or delta "content" that is an array of parts, which go-openai
// cannot decode in a stream and keeps apart from Content otherwise: the
// content becomes the text of its text parts, and the text of its thinking
// parts becomes "reasoning" (read by extraReasoning). Tool call arguments
// sent as a JSON object or array instead of a string become that JSON's
// text. It reports whether it changed anything.
func flattenContentParts(raw []byte) ([]byte, bool) {
	var doc map[string]json.RawMessage
	if json.Unmarshal(raw, &doc) != nil {
		return raw, false
	}
	var choices []map[string]json.RawMessage
	if json.Unmarshal(doc["choices"], &choices) != nil {
		return raw, false
	}
	changed := false
	for _, ch := range choices {
		for _, key := range []string{"message", "delta"} {
			var m map[string]json.RawMessage
			if json.Unmarshal(ch[key], &m) != nil || m == nil {
				continue
			}
			edited := stringifyArguments(m)
			var parts []contentPart
			if c := bytes.TrimSpace(m["content"]); len(c) > 0 && c[0] == '[' && json.Unmarshal(c, &parts) == nil {
				text, thinking := partsText(parts)
				m["content"], _ = json.Marshal(text)
				if _, ok := m["reasoning"]; !ok && thinking != "" {
					m["reasoning"], _ = json.Marshal(thinking)
				}
				edited = true
			}
			if edited {
				ch[key], _ = json.Marshal(m)
				changed = true
			}
		}
	}
	if !changed {
		return raw, false
	}
	doc["choices"], _ = json.Marshal(choices)
	out, err := json.Marshal(doc)
	if err != nil {
		return raw, false
	}
	return out, true
}

// stringifyArguments turns the tool call arguments of message m that are a
// JSON object or array into strings holding that JSON, and reports
// whether it changed any.
func stringifyArguments(m map[string]json.RawMessage) bool {
	var calls []map[string]json.RawMessage
	if json.Unmarshal(m["tool_calls"], &calls) != nil {
		return false
	}
	changed := false
	for _, c := range calls {
		var fn map[string]json.RawMessage
		if json.Unmarshal(c["function"], &fn) != nil || fn == nil {
			continue
		}
		a := bytes.TrimSpace(fn["arguments"])
		if len(a) == 0 || (a[0] != '{' && a[0] != '[') {
			continue
		}
		fn["arguments"], _ = json.Marshal(string(a))
		c["function"], _ = json.Marshal(fn)
		changed = true
	}
	if changed {
		m["tool_calls"], _ = json.Marshal(calls)
	}
	return changed
}
