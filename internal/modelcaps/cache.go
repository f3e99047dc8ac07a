package modelcaps

import (
	"strconv"
	"strings"
)

// Prompt-cache retention values (OpenAI's prompt_cache_retention).
const (
	RetentionInMemory = "in_memory"
	Retention24h      = "24h"
)

// TakesCacheRetention reports whether model takes retention as its
// prompt_cache_retention, as OpenAI documents it: "24h" (extended prompt
// caching) on the gpt-4.1 and gpt-5 families and later, "in_memory" on
// every model but gpt-5.5 and later, which take only "24h". For a model
// outside OpenAI's families (gpt-*, o1, o3, o4, chatgpt-*), and for another
// value, it reports true: the caller's setting stands, and the server
// decides.
func TakesCacheRetention(model, retention string) bool {
	name := Normalize(model)
	major, minor, ok := gptVersion(name)
	openai := ok || strings.HasPrefix(name, "o1") || strings.HasPrefix(name, "o3") ||
		strings.HasPrefix(name, "o4") || strings.HasPrefix(name, "chatgpt-")
	if !openai {
		return true
	}
	switch retention {
	case Retention24h:
		return ok && (major > 4 || major == 4 && minor >= 1)
	case RetentionInMemory:
		return !ok || major < 5 || major == 5 && minor < 5
	}
	return true
}

// gptVersion returns the version of a gpt-N[.M] name: gpt-4o is 4.0,
// gpt-4.1-mini 4.1, gpt-5.5-pro 5.5.
func gptVersion(name string) (major, minor int, ok bool) {
	rest, found := strings.CutPrefix(name, "gpt-")
	if !found {
		return 0, 0, false
	}
	end := strings.IndexFunc(rest, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if end < 0 {
		end = len(rest)
	}
	num := strings.TrimRight(rest[:end], ".")
	maj, mn, _ := strings.Cut(num, ".")
	var err error
	if major, err = strconv.Atoi(maj); err != nil {
		return 0, 0, false
	}
	if mn != "" {
		if minor, err = strconv.Atoi(mn); err != nil {
			return 0, 0, false
		}
	}
	return major, minor, true
}
