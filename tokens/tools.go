package tokens

import (
	"encoding/json"
	"hash/maphash"

	"github.com/reprompt/reprompt/internal/msghash"
)

// Tool is a tool schema as sent to a model. An llm.ToolSpec converts to
// it with a conversion, tokens.Tool(spec), as the two have the same fields.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// toolCacheSize bounds the per-schema cache of Accountant.Tools.
const toolCacheSize = 1024

// toolCache remembers the last tool list counted and the counts of schemas.
type toolCache struct {
	last  []Tool
	total int
	valid bool
	each  map[uint64]int
}

// Tools returns the token count of a request's tool list: ToolsOverhead
// plus the Counter's Tool count of each schema, or 0 for an empty list.
//
// The list last counted is remembered: a list whose names, descriptions and
// parameters are the same strings and bytes as last time (compared by
// identity first, by content when they are copies) costs O(len(tools)) and
// tokenizes nothing; a changed list tokenizes only the schemas not seen
// before (a cache of 1024 schemas keyed by a hash of their content). tools is
// read, never modified; its parameters must not be changed in place after
// the call.
func (a *Accountant) Tools(tools []Tool) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	tc := &a.tools
	if tc.valid && sameTools(tc.last, tools) {
		return tc.total
	}
	if tc.each == nil || len(tc.each) >= toolCacheSize {
		tc.each = make(map[uint64]int)
	}
	total := 0
	if len(tools) > 0 {
		total = ToolsOverhead
	}
	for _, t := range tools {
		h := hashTool(&t)
		n, ok := tc.each[h]
		if !ok {
			n = a.c.Tool(t.Name, t.Description, t.Parameters)
			tc.each[h] = n
		}
		total += n
	}
	clear(tc.last)
	tc.last = append(tc.last[:0], tools...)
	tc.total, tc.valid = total, true
	return total
}

func sameTools(a, b []Tool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Name != y.Name || x.Description != y.Description || len(x.Parameters) != len(y.Parameters) {
			return false
		}
		if len(x.Parameters) > 0 && &x.Parameters[0] != &y.Parameters[0] && string(x.Parameters) != string(y.Parameters) {
			return false
		}
	}
	return true
}

func hashTool(t *Tool) uint64 {
	var h maphash.Hash
	h.SetSeed(msghash.Seed())
	msghash.String(&h, t.Name)
	msghash.String(&h, t.Description)
	msghash.Len(&h, len(t.Parameters))
	h.Write(t.Parameters)
	return h.Sum64()
}
