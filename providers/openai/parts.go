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
// parts becomes "reasoning" (read by extraReasoning). It reports whether
// it changed anything.
func flattenContentParts(raw []byte) ([]byte, bool) {
	if !bytes.Contains(raw, []byte(`"content"`)) {
		return raw, false
	}
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
			c := bytes.TrimSpace(m["content"])
			if len(c) == 0 || c[0] != '[' {
				continue
			}
			var parts []contentPart
			if json.Unmarshal(c, &parts) != nil {
				continue
			}
			text, thinking := partsText(parts)
			m["content"], _ = json.Marshal(text)
			if _, ok := m["reasoning"]; !ok && thinking != "" {
				m["reasoning"], _ = json.Marshal(thinking)
			}
			ch[key], _ = json.Marshal(m)
			changed = true
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
