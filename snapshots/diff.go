package snapshots

import (
	"fmt"
	"strings"

	gocmp "github.com/google/go-cmp/cmp"
)

// maxSectionDiffs bounds the sections whose diffs a mismatch prints.
const maxSectionDiffs = 6

type section struct{ name, body string }

// splitSections splits a golden text into its header ("" name) and its
// sections, in order.
func splitSections(text string) []section {
	out := []section{{}}
	start := 0 // offset of the current section's body
	pos := 0
	for line := range strings.Lines(text) {
		if l := strings.TrimSuffix(line, "\n"); isMarker(l) {
			out[len(out)-1].body = text[start:pos]
			out = append(out, section{name: strings.TrimSpace(l[3 : len(l)-3])})
			start = pos + len(line)
		}
		pos += len(line)
	}
	out[len(out)-1].body = text[start:]
	return out
}

// diffSections returns a go-cmp diff of each section that differs, in the
// order of got, then those only in want; at most maxSectionDiffs.
func diffSections(want, got string) string {
	ws, gs := splitSections(want), splitSections(got)
	wantBody := map[string]string{}
	for _, s := range ws {
		wantBody[s.name] = s.body
	}
	type pair struct {
		name     string
		w, g     string
		inW, inG bool
	}
	var pairs []pair
	seen := map[string]bool{}
	for _, s := range gs {
		w, ok := wantBody[s.name]
		pairs = append(pairs, pair{name: s.name, w: w, g: s.body, inW: ok, inG: true})
		seen[s.name] = true
	}
	for _, s := range ws {
		if !seen[s.name] {
			pairs = append(pairs, pair{name: s.name, w: s.body, inW: true})
		}
	}
	var b strings.Builder
	n := 0
	for _, p := range pairs {
		if p.inW && p.inG && p.w == p.g {
			continue
		}
		n++
		if n > maxSectionDiffs {
			continue
		}
		label := p.name
		if label == "" {
			label = "header"
		}
		switch {
		case !p.inW:
			fmt.Fprintf(&b, "-- %s -- (only in got)\n", label)
		case !p.inG:
			fmt.Fprintf(&b, "-- %s -- (only in want)\n", label)
		default:
			fmt.Fprintf(&b, "-- %s --\n", label)
		}
		b.WriteString(gocmp.Diff(lines(p.w), lines(p.g)))
	}
	if n > maxSectionDiffs {
		fmt.Fprintf(&b, "… and %d more sections differ\n", n-maxSectionDiffs)
	}
	if n == 0 { // differences the sections hide (e.g. a section repeated)
		b.WriteString(gocmp.Diff(lines(want), lines(got)))
	}
	return b.String()
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
