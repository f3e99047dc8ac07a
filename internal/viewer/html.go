package viewer

import (
	"bytes"
	_ "embed" // the page's template, style and script
	"encoding/json"
	"html"
	"io"
	"strings"
)

var (
	//go:embed assets/viewer.html
	pageHTML string
	//go:embed assets/viewer.css
	pageCSS string
	//go:embed assets/viewer.js
	pageJS string
)

// HTML writes run as one self-contained HTML page: the run as JSON, and
// the style and script that render it (a chart of input tokens per step,
// split into cached prefix and new tokens, with commits and compactions
// marked; a timeline of the steps; the selected step's effects, request
// changes, reply, tool calls, state changes and sub-agents). The page loads
// nothing else.
func HTML(w io.Writer, run *Run) error {
	data, err := json.Marshal(run) // escapes <, > and &: safe inside <script>
	if err != nil {
		return err
	}
	var b bytes.Buffer
	b.Grow(len(pageHTML) + len(pageCSS) + len(pageJS) + len(data))
	rest := pageHTML
	for {
		i := strings.Index(rest, "{{")
		if i < 0 {
			b.WriteString(rest)
			break
		}
		b.WriteString(rest[:i])
		rest = rest[i:]
		j := strings.Index(rest, "}}")
		switch rest[:j+2] {
		case "{{TITLE}}":
			b.WriteString(html.EscapeString(run.Title))
		case "{{CSS}}":
			b.WriteString(pageCSS)
		case "{{JS}}":
			b.WriteString(pageJS)
		case "{{DATA}}":
			b.Write(data)
		default:
			b.WriteString(rest[:j+2])
		}
		rest = rest[j+2:]
	}
	_, err = w.Write(b.Bytes())
	return err
}
