// Package modelcaps knows which models take a typed answer as a strict
// json_schema response_format (OpenAI's structured outputs), and which
// take which prompt_cache_retention (TakesCacheRetention). It is the one
// table behind builtin.Profile.StructuredOutput and the OpenAI adapter's
// default for Config.NativeOutput, kept in a leaf package so that the
// adapter does not link the context-management effects (and their
// expression language) to read it.
package modelcaps

import "strings"

// Normalize returns the model name as the tables match it: lower case,
// without a provider prefix ("openai/", "ollama/") or a tag (":8b").
func Normalize(model string) string {
	name := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	if i := strings.IndexByte(name, ':'); i >= 0 {
		name = name[:i]
	}
	return name
}

// structured lists, by prefix, the models OpenAI documents as taking a
// strict json_schema response_format, and (false) the earlier snapshots of
// those families that do not. The longest matching prefix decides.
var structured = []struct {
	prefix string
	ok     bool
}{
	{"gpt-4o-2024-05-13", false},
	{"o1-preview", false},
	{"o1-mini", false},
	{"gpt-5", true},
	{"gpt-4.1", true},
	{"gpt-4o", true},
	{"o1", true},
	{"o3", true},
	{"o4-mini", true},
}

// StructuredOutput reports whether model takes a strict json_schema
// response_format: OpenAI's gpt-5, gpt-4.1, gpt-4o (but gpt-4o-2024-05-13),
// o1 (but o1-preview and o1-mini), o3 and o4-mini families. It is false for
// models it does not know, local ones among them: servers differ.
func StructuredOutput(model string) bool {
	name := Normalize(model)
	best, ok := -1, false
	for _, e := range structured {
		if strings.HasPrefix(name, e.prefix) && len(e.prefix) > best {
			best, ok = len(e.prefix), e.ok
		}
	}
	return ok
}
