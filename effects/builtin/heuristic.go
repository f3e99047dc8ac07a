package builtin

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/reprompt/reprompt/defs"
)

// heuristicSummary summarises msgs without a model, after seed 004's rule
// based compressor: the last three user requests, assistant notes and tool
// errors (clipped), the tools used with their failures, the request that
// began a split turn, and the previous summary (clipped) it updates.
func heuristicSummary(prev *defs.Message, msgs []defs.Message, split bool, turnStart int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Summarised by rule, without a model: %d earlier messages.\n", len(msgs))
	if prev != nil {
		pt := prev.Meta[MetaSummaryText]
		if pt == "" {
			pt = prev.Content
		}
		b.WriteString("\nEarlier summary:\n" + clip(pt, 1500) + "\n")
	}
	var users, notes, errs []string
	type use struct{ calls, errors int }
	tools := map[string]*use{}
	var order []string
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case defs.RoleUser:
			if m.Meta[MetaSummary] == "" {
				users = append(users, clip(oneLine(m.Content), 200))
			}
		case defs.RoleAssistant:
			if c := strings.TrimSpace(m.Content); c != "" {
				notes = append(notes, clip(oneLine(c), 200))
			}
			for _, tc := range m.ToolCalls {
				u := tools[tc.Name]
				if u == nil {
					u = &use{}
					tools[tc.Name] = u
					order = append(order, tc.Name)
				}
				u.calls++
			}
		case defs.RoleTool:
			if m.IsError {
				if u := tools[m.Name]; u != nil {
					u.errors++
				}
				errs = append(errs, m.Name+": "+clip(oneLine(m.Content), 160))
			}
		}
	}
	list := func(title string, items []string, n int) {
		if len(items) == 0 {
			return
		}
		b.WriteString("\n" + title + ":\n")
		for _, it := range items[max(len(items)-n, 0):] {
			b.WriteString("- " + it + "\n")
		}
	}
	list("User requests (most recent last)", users, 3)
	list("Assistant notes (most recent last)", notes, 3)
	list("Tool errors (most recent last)", errs, 3)
	if len(order) > 0 {
		b.WriteString("\nTools used:")
		for i, name := range order {
			u := tools[name]
			sep := ","
			if i == 0 {
				sep = ""
			}
			fmt.Fprintf(&b, "%s %s ×%d", sep, name, u.calls)
			if u.errors > 0 {
				fmt.Fprintf(&b, " (%d failed)", u.errors)
			}
		}
		b.WriteString("\n")
	}
	if split {
		b.WriteString("\nCurrent turn (in progress, continues after this summary)")
		if turnStart >= 0 {
			b.WriteString(": it began with the request \"" + clip(oneLine(msgs[turnStart].Content), 300) + "\"")
		}
		b.WriteString(".\n")
	}
	return strings.TrimSpace(b.String())
}

// trackFiles returns the files read and modified by the tool calls of msgs,
// leaving out the calls whose result is an error.
func trackFiles(msgs []defs.Message, f FileTracking) (read, modified []string) {
	failed := map[string]bool{}
	for i := range msgs {
		if msgs[i].Role == defs.RoleTool && msgs[i].IsError {
			failed[msgs[i].ToolCallID] = true
		}
	}
	for i := range msgs {
		for _, tc := range msgs[i].ToolCalls {
			isRead, isMod := slices.Contains(f.ReadTools, tc.Name), slices.Contains(f.ModifyTools, tc.Name)
			if (!isRead && !isMod) || failed[tc.ID] {
				continue
			}
			paths := argPaths(tc.Arguments, f.ArgKeys)
			if isMod {
				modified = append(modified, paths...)
			} else {
				read = append(read, paths...)
			}
		}
	}
	return read, modified
}

// argPaths returns the string (or strings) under the first of keys found in
// the JSON object args.
func argPaths(args json.RawMessage, keys []string) []string {
	var obj map[string]any
	if json.Unmarshal(args, &obj) != nil {
		return nil
	}
	for _, k := range keys {
		switch v := obj[k].(type) {
		case string:
			if v != "" {
				return []string{v}
			}
		case []any:
			var out []string
			for _, e := range v {
				if s, ok := e.(string); ok && s != "" {
					out = append(out, s)
				}
			}
			if len(out) > 0 {
				return out
			}
		}
	}
	return nil
}

// mergeFiles merges file lists: modified files are not listed as read.
// Both results are sorted and free of duplicates.
func mergeFiles(read, modified, newRead, newModified []string) ([]string, []string) {
	mod := map[string]bool{}
	for _, p := range append(slices.Clone(modified), newModified...) {
		mod[p] = true
	}
	rd := map[string]bool{}
	for _, p := range append(slices.Clone(read), newRead...) {
		if !mod[p] {
			rd[p] = true
		}
	}
	return sortedKeys(rd), sortedKeys(mod)
}

func sortedKeys(m map[string]bool) []string {
	if len(m) == 0 {
		return nil
	}
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
