package snapshots

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/runtime"
)

// Format renders steps, and the error the run ended with (nil if none), as
// the text of a golden file. The Redact options given apply; the others are
// ignored. The text is deterministic: it holds no wall-clock time, map keys
// are sorted, and effects are named by id and file without line numbers.
// Nil steps are skipped.
func Format(steps []*runtime.Step, runErr error, opts ...Option) []byte {
	return format(steps, runErr, newOptions(opts))
}

// goLine matches the line number of a Go source position.
var goLine = regexp.MustCompile(`(\.go):\d+`)

func format(steps []*runtime.Step, runErr error, o *options) []byte {
	f := &formatter{schemas: map[string]shown{}, red: func(s string) string {
		for _, r := range o.redact {
			s = r.re.ReplaceAllString(s, r.repl)
		}
		return s
	}}
	var prev, last *runtime.Step
	for _, s := range steps {
		if s == nil {
			continue
		}
		f.step(s, prev)
		if s.Request != nil { // a step completed after a pause or a crash sent none
			prev = s
		}
		last = s
	}
	f.section("end")
	fmt.Fprintf(&f.b, "steps: %d\n", len(steps))
	if last != nil && len(last.Awaiting) > 0 {
		fmt.Fprintf(&f.b, "paused: awaiting %s\n", awaitingList(last.Awaiting))
	}
	if runErr != nil {
		// Sites in errors lose their line numbers, as effect sites do, so
		// that editing a file does not change every snapshot.
		f.field("", "error", goLine.ReplaceAllString(runErr.Error(), "$1"))
	}
	body := f.b.String()
	for _, r := range o.redact {
		body = r.re.ReplaceAllString(body, r.repl)
	}
	return []byte(Header + "\n" + body)
}

// redMessage returns m with the redactions applied to its text, so that
// messages that differ only in redacted values compare equal.
func (f *formatter) redMessage(m defs.Message) defs.Message {
	m.Content, m.Reasoning = f.red(m.Content), f.red(m.Reasoning)
	if len(m.ToolCalls) > 0 {
		calls := make([]defs.ToolCall, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			c.Arguments = []byte(f.red(string(c.Arguments)))
			calls[i] = c
		}
		m.ToolCalls = calls
	}
	return m
}

type shown struct {
	step   int
	schema string
}

type formatter struct {
	b       strings.Builder
	schemas map[string]shown    // last schema shown per tool name
	red     func(string) string // applies the redactions
	prefix  string              // of section names: "" or a sub-agent's "step N/agent NAME ID/"
}

func (f *formatter) section(name string) { fmt.Fprintf(&f.b, "-- %s --\n", name) }

// text writes lines as they are, escaping lines that would read as a section
// marker.
func (f *formatter) text(s string) {
	for line := range strings.Lines(strings.TrimSuffix(s, "\n") + "\n") {
		if isMarker(strings.TrimSuffix(line, "\n")) {
			f.b.WriteString(`\`)
		}
		f.b.WriteString(line)
	}
}

// field writes "indent label: value", or for a multi-line value
// "indent label: |" and the lines indented two more spaces.
func (f *formatter) field(indent, label, value string) {
	if !strings.Contains(value, "\n") {
		fmt.Fprintf(&f.b, "%s%s: %s\n", indent, label, value)
		return
	}
	fmt.Fprintf(&f.b, "%s%s: |\n", indent, label)
	for line := range strings.Lines(strings.TrimSuffix(value, "\n") + "\n") {
		if line != "\n" {
			f.b.WriteString(indent + "  ")
		}
		f.b.WriteString(line)
	}
}

func isMarker(line string) bool {
	return strings.HasPrefix(line, "-- ") && strings.HasSuffix(line, " --") && len(line) >= 6
}

func (f *formatter) step(s, prev *runtime.Step) {
	name := f.prefix + fmt.Sprintf("step %d", s.Number)
	if len(s.Decisions) > 0 {
		name += " decided" // the record that completes a paused step
		f.decisions(name, s.Decisions)
	}
	if len(s.Effects) > 0 || s.Committed {
		f.section(name + "/effects")
		for _, e := range s.Effects {
			file, _, _ := strings.Cut(e.Site, ":")
			fmt.Fprintf(&f.b, "%s %s (%s): %s\n", e.ID, e.Phase, file, e.Reason)
		}
		if s.Committed {
			f.b.WriteString("transcript committed\n")
		}
	}
	refs := func(section string, rs []defs.Ref) {
		if len(rs) == 0 {
			return
		}
		f.section(name + "/" + section)
		for _, r := range rs {
			f.b.WriteString(r.String() + "\n")
		}
	}
	for i, sum := range s.Summaries {
		f.summary(fmt.Sprintf("%s/summary %d", name, i), sum)
	}
	refs("disabled", s.Disabled)
	refs("reminded", s.Reminded)
	if req := s.Request; req != nil {
		var prevReq *llm.Request
		if prev != nil {
			prevReq = prev.Request
		}
		f.section(name + "/system")
		switch {
		case req.System == "":
			f.b.WriteString("(none)\n")
		case prevReq != nil && f.red(prevReq.System) == f.red(req.System):
			fmt.Fprintf(&f.b, "(as in step %d)\n", prev.Number)
		default:
			f.text(req.System)
		}
		f.section(name + "/tools")
		if len(req.Tools) == 0 {
			f.b.WriteString("(none)\n")
		}
		for _, t := range req.Tools {
			f.tool(s.Number, t)
		}
		if o := req.Output; o != nil {
			f.output(name, s.Number, o)
		}
		f.section(name + "/messages")
		f.messages(req.Messages, prevReq, prev)
	}
	if r := s.Reply; r != nil && len(s.Decisions) == 0 { // a decided step's reply is its paused record's
		f.section(name + "/reply")
		if r.FinishReason != "" {
			fmt.Fprintf(&f.b, "finish: %s\n", r.FinishReason)
		}
		if r.Refusal != "" {
			f.field("", "refusal", r.Refusal)
		}
		f.message("", r.Message)
	}
	for _, a := range s.Agents {
		f.agent(name, a)
	}
	if len(s.ToolResults) > 0 {
		f.section(name + "/results")
		for _, r := range s.ToolResults {
			fmt.Fprintf(&f.b, "%s %s %s", r.CallID, r.Name, oneLine(r.Arguments))
			if r.IsError {
				f.b.WriteString(" (error)")
			}
			f.b.WriteString("\n")
			f.field("  ", "content", r.Content)
		}
	}
	if s.Output != nil {
		f.section(name + "/answer")
		f.b.WriteString(f.red(oneLine(s.Output)) + "\n")
	}
	if len(s.Awaiting) > 0 {
		f.section(name + "/awaiting")
		for _, a := range s.Awaiting {
			fmt.Fprintf(&f.b, "%s %s %s\n", a.CallID, a.Tool, f.red(oneLine(a.Arguments)))
		}
	}
	if s.State != nil {
		f.section(name + "/state")
		if len(s.State) == 0 {
			f.b.WriteString("(empty)\n")
		}
		for _, k := range slices.Sorted(maps.Keys(s.State)) {
			f.field("", k, jsonValue(s.State[k]))
		}
	}
}

// summary writes a summary request and its answer as one section.
func (f *formatter) summary(section string, sum *runtime.Summary) {
	f.section(section)
	if req := sum.Request; req != nil {
		if req.System != "" {
			f.field("", "system", req.System)
		}
		for _, m := range req.Messages {
			f.field("", string(m.Role), m.Content)
		}
	}
	if sum.Err != nil {
		f.field("", "error", goLine.ReplaceAllString(sum.Err.Error(), "$1"))
	}
	if r := sum.Reply; r != nil {
		f.field("", "summary", r.Message.Content)
	}
}

// agent writes the steps of a sub-agent that a tool call of the step
// named parent ran, as sections named "parent/agent NAME CALLID/step N/…",
// then an end section with its step count and error. References to earlier
// steps ("as in step N") stay within the sub-agent's steps.
func (f *formatter) agent(parent string, a *runtime.AgentRun) {
	sub := &formatter{schemas: map[string]shown{}, red: f.red, prefix: fmt.Sprintf("%s/agent %s %s/", parent, a.Name, a.CallID)}
	var prev *runtime.Step
	for _, s := range a.Steps {
		if s == nil {
			continue
		}
		sub.step(s, prev)
		prev = s
	}
	sub.section(sub.prefix + "end")
	fmt.Fprintf(&sub.b, "steps: %d\n", len(a.Steps))
	if a.Err != nil {
		sub.field("", "error", goLine.ReplaceAllString(a.Err.Error(), "$1"))
	}
	f.b.WriteString(sub.b.String())
}

// output writes the typed answer a request asks for: its name, Go type and
// mode, and its schema unless it is the answer tool's (listed with the
// tools) or the same as at an earlier step.
func (f *formatter) output(name string, step int, o *llm.OutputSpec) {
	f.section(name + "/output")
	fmt.Fprintf(&f.b, "%s (%s, %s): %s\n", o.Name, o.Type, o.Mode, oneLineText(o.Description))
	if o.Mode == llm.OutputTool {
		f.b.WriteString("  schema: (the tool's)\n")
		return
	}
	schema := f.red(indentJSON(o.Schema))
	key := "\x00output " + o.Name
	if last, ok := f.schemas[key]; ok && last.schema == schema {
		fmt.Fprintf(&f.b, "  schema: (as in step %d)\n", last.step)
		return
	}
	f.schemas[key] = shown{step, schema}
	f.field("  ", "schema", schema)
}

func (f *formatter) tool(step int, t llm.ToolSpec) {
	fmt.Fprintf(&f.b, "%s: %s\n", t.Name, oneLineText(t.Description))
	schema := f.red(indentJSON(t.Parameters))
	if last, ok := f.schemas[t.Name]; ok && last.schema == schema {
		fmt.Fprintf(&f.b, "  schema: (as in step %d)\n", last.step)
		return
	}
	f.schemas[t.Name] = shown{step, schema}
	f.field("  ", "schema", schema)
}

func (f *formatter) messages(msgs []defs.Message, prevReq *llm.Request, prev *runtime.Step) {
	if len(msgs) == 0 {
		f.b.WriteString("(none)\n")
		return
	}
	same := 0
	if prevReq != nil {
		for same < len(msgs) && same < len(prevReq.Messages) && f.redMessage(msgs[same]).Identical(f.redMessage(prevReq.Messages[same])) {
			same++
		}
	}
	switch {
	case same == 1:
		fmt.Fprintf(&f.b, "[0] (as in step %d)\n", prev.Number)
	case same > 1:
		fmt.Fprintf(&f.b, "[0-%d] (as in step %d)\n", same-1, prev.Number)
	}
	for i := same; i < len(msgs); i++ {
		m := msgs[i]
		fmt.Fprintf(&f.b, "[%d] %s", i, m.Role)
		if m.ToolCallID != "" {
			f.b.WriteString(" " + m.ToolCallID)
		}
		if m.Name != "" {
			f.b.WriteString(" " + m.Name)
		}
		if m.IsError {
			f.b.WriteString(" (error)")
		}
		f.b.WriteString("\n")
		f.message("  ", m)
	}
}

// message writes the body of a message (not its role, id, name).
func (f *formatter) message(indent string, m defs.Message) {
	for _, k := range slices.Sorted(maps.Keys(m.Meta)) {
		f.field(indent, "meta", k+"="+m.Meta[k])
	}
	if m.Reasoning != "" {
		f.field(indent, "reasoning", m.Reasoning)
	}
	if m.Content != "" {
		f.field(indent, "content", m.Content)
	}
	for _, c := range m.ToolCalls {
		fmt.Fprintf(&f.b, "%scall: %s %s %s\n", indent, c.ID, c.Name, oneLine(c.Arguments))
	}
}

// oneLine returns raw JSON compacted to one line, or the raw text quoted
// when it is not valid JSON (or is empty).
func oneLine(raw []byte) string {
	var b bytes.Buffer
	if len(raw) == 0 || json.Compact(&b, raw) != nil {
		return fmt.Sprintf("%q", raw)
	}
	return b.String()
}

// oneLineText returns s with its line breaks written as \n.
func oneLineText(s string) string { return strings.ReplaceAll(s, "\n", `\n`) }

func indentJSON(raw []byte) string {
	var b bytes.Buffer
	if len(raw) == 0 || json.Indent(&b, raw, "", "  ") != nil {
		return fmt.Sprintf("%q", raw)
	}
	return b.String()
}

// jsonValue renders a state value as JSON (map keys sorted by
// encoding/json): on one line when short, indented otherwise.
func jsonValue(v any) string {
	out, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("(not JSON: %v)", err)
	}
	if len(out) <= 100 {
		return string(out)
	}
	return indentJSON(out)
}
