package steprec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/reprompt/reprompt/defs"
)

// Header is the first line of every golden step file. The number is the
// version of the format; a file with another header fails the comparison
// and must be regenerated.
const Header = "reprompt snapshot v1"

// HeaderPrefix starts the header of every version of the format.
const HeaderPrefix = "reprompt snapshot v"

// Run is what a golden step file holds: the records of a run's steps and
// the error it ended with.
type Run struct {
	// Steps are the records, in order. Write skips nil ones (and counts
	// them).
	Steps []*Step
	// Err is the error the run ended with; "" if none.
	Err string
}

// WriteOptions change what Write writes. The zero value writes the
// records as they are.
type WriteOptions struct {
	// Redact, if not nil, rewrites the text of the file (values that
	// change from run to run: ids, times). Write compares the texts it
	// writes "(as in step N)" for after Redact.
	Redact func(string) string
}

// goLine matches the line number of a Go source position.
var goLine = regexp.MustCompile(`(\.go):\d+`)

// Write returns run as the text of a golden step file: a txtar archive
// whose first line is Header, one section a part of a step ("step 2/
// messages", "step 2/agent helper call-1/step 0/reply", ...) and an "end"
// section. The text is deterministic: it holds no measure (tokens,
// durations), map keys are sorted, and effect sites and errors lose their
// line numbers. A system prompt, a tool's schema or leading messages the
// same as at the previous step that sent a request are written "(as in
// step N)". Parse reads the text back.
func Write(run *Run, o WriteOptions) []byte {
	red := o.Redact
	plain := red == nil
	if plain {
		red = func(s string) string { return s }
	}
	w := &writer{schemas: map[string]shown{}, red: red, plain: plain}
	var prev, last *Step
	for _, s := range run.Steps {
		if s == nil {
			continue
		}
		w.step(s, prev)
		if s.Request != nil { // a step completed after a pause or a crash sent none
			prev = s
		}
		last = s
	}
	w.section("end")
	fmt.Fprintf(&w.b, "steps: %d\n", len(run.Steps))
	if last != nil && len(last.Awaiting) > 0 {
		ids := make([]string, len(last.Awaiting))
		for i, a := range last.Awaiting {
			ids[i] = a.CallID + " " + a.Tool
		}
		fmt.Fprintf(&w.b, "paused: awaiting %s\n", strings.Join(ids, ", "))
	}
	if run.Err != "" {
		// Sites in errors lose their line numbers, as effect sites do, so
		// that editing a file does not change every snapshot.
		w.field("", "error", noLines(run.Err))
	}
	return []byte(Header + "\n" + red(w.b.String()))
}

// WriteStep returns the sections that Write writes for the step that
// run.Steps[i] is a record of: that record's and those of the same step
// before it (a step completed after a pause has two), in order, without the
// header and the end section. The records before are read only for what
// the step repeats of them ("(as in step N)"), so that its text is the
// same as in the whole file at a fraction of the cost. The redactions
// apply to the step's text. "" when run.Steps[i] is not a record.
func WriteStep(run *Run, i int, o WriteOptions) string {
	if i < 0 || i >= len(run.Steps) || run.Steps[i] == nil {
		return ""
	}
	red := o.Redact
	plain := red == nil
	if plain {
		red = func(s string) string { return s }
	}
	w := &writer{schemas: map[string]shown{}, red: red, plain: plain}
	w.b.Grow(2 << 10) // a step's text, mostly: no growing by doubling from 8 bytes
	n := run.Steps[i].Step
	var prev *Step
	for _, s := range run.Steps[:i+1] {
		if s == nil {
			continue
		}
		if s.Step == n {
			w.step(s, prev)
		} else {
			w.track(s)
		}
		if s.Request != nil {
			prev = s
		}
	}
	return red(w.b.String())
}

// track notes what writing s would leave for the steps after it (the
// schemas shown), without writing it.
func (w *writer) track(s *Step) {
	req := s.Request
	if req == nil {
		return
	}
	for _, t := range req.Tools {
		w.seen(t.Name, s.Step, t.Schema)
	}
	if o := req.Output; o != nil && o.Mode != "tool" {
		w.seen(outputKey+o.Name, s.Step, o.Schema)
	}
}

// noLines removes the line numbers of Go source positions from s.
func noLines(s string) string { return goLine.ReplaceAllString(s, "$1") }

type shown struct {
	step        int
	schema, raw string // the schema as written, and as the record has it
}

type writer struct {
	b       strings.Builder
	schemas map[string]shown    // last schema shown per tool name
	red     func(string) string // applies the redactions
	plain   bool                // there are none: red returns its argument
	scratch bytes.Buffer        // for compacting JSON
	prefix  string              // of section names: "" or a sub-agent's "step N/agent NAME ID/"
}

// redMessage returns m with the redactions applied to its text, so that
// messages that differ only in redacted values compare equal.
func (w *writer) redMessage(m defs.Message) defs.Message {
	if w.plain {
		return m
	}
	m.Content, m.Reasoning = w.red(m.Content), w.red(m.Reasoning)
	if len(m.ToolCalls) > 0 {
		calls := make([]defs.ToolCall, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			c.Arguments = []byte(w.red(string(c.Arguments)))
			calls[i] = c
		}
		m.ToolCalls = calls
	}
	return m
}

func (w *writer) section(name string) { w.str("-- ", name, " --\n") }

// section2 starts the section named name+part.
func (w *writer) section2(name, part string) { w.str("-- ", name, part, " --\n") }

// oneLine writes raw as OneLine returns it, compacted without a copy.
func (w *writer) oneLine(raw string) {
	if raw != "" {
		n := w.scratch.Len()
		if json.Compact(&w.scratch, []byte(raw)) == nil {
			w.b.Write(w.scratch.Bytes()[n:])
			w.scratch.Reset()
			return
		}
		w.scratch.Reset()
	}
	w.b.WriteString(strconv.Quote(raw))
}

// str writes parts, one after the other: what fmt.Fprintf would write of
// strings, without its cost on the hot path of a report.
func (w *writer) str(parts ...string) {
	for _, p := range parts {
		w.b.WriteString(p)
	}
}

// asIn writes "(as in step n)" and a line break.
func (w *writer) asIn(n int) { w.str("(as in step ", strconv.Itoa(n), ")\n") }

// text writes lines as they are, escaping lines that would read as a section
// marker.
func (w *writer) text(s string) {
	for line := range strings.Lines(strings.TrimSuffix(s, "\n") + "\n") {
		if isMarker(strings.TrimSuffix(line, "\n")) {
			w.b.WriteString(`\`)
		}
		w.b.WriteString(line)
	}
}

// field writes "indent label: value", or for a multi-line value
// "indent label: |" and the lines indented two more spaces.
func (w *writer) field(indent, label, value string) {
	if !strings.Contains(value, "\n") {
		w.str(indent, label, ": ", value, "\n")
		return
	}
	w.str(indent, label, ": |\n")
	for line := range strings.Lines(strings.TrimSuffix(value, "\n") + "\n") {
		if line != "\n" {
			w.b.WriteString(indent + "  ")
		}
		w.b.WriteString(line)
	}
}

func isMarker(line string) bool {
	return strings.HasPrefix(line, "-- ") && strings.HasSuffix(line, " --") && len(line) >= 6
}

func (w *writer) step(s, prev *Step) {
	name := w.prefix + "step " + strconv.Itoa(s.Step)
	if len(s.Decisions) > 0 {
		name += " decided" // the record that completes a paused step
		w.section2(name, "/decisions")
		for _, d := range s.Decisions {
			if len(d.Asked) > 0 && d.Approved {
				// One line: the questions and answers as JSON.
				qa, _ := json.Marshal(d.Asked)
				fmt.Fprintf(&w.b, "%s %s answered %s\n", d.CallID, d.Tool, w.red(string(qa)))
				continue
			}
			if d.Approved {
				fmt.Fprintf(&w.b, "%s %s approved\n", d.CallID, d.Tool)
				continue
			}
			w.field("", fmt.Sprintf("%s %s denied", d.CallID, d.Tool), w.red(d.Reason))
		}
	}
	if s.Resumed {
		// The record that completes a step a crash cut short after the
		// model's reply: it starts a record of its own (Parse), after the
		// attempt's if the file has it.
		w.section2(name, "/resumed")
		if len(s.Interrupted) == 0 {
			w.b.WriteString("interrupted: (none)\n")
		}
		for _, id := range s.Interrupted {
			fmt.Fprintf(&w.b, "interrupted: %s\n", id)
		}
	}
	if len(s.Sent) > 0 {
		// The conversation's turn, and the user messages that joined the
		// transcript at this step.
		w.section2(name, "/sent")
		fmt.Fprintf(&w.b, "turn %d\n", s.Turn)
		for _, m := range s.Sent {
			fmt.Fprintf(&w.b, "user: %s\n", strconv.Quote(w.red(m)))
		}
	}
	if len(s.Effects) > 0 || s.Committed {
		w.section2(name, "/effects")
		for _, e := range s.Effects {
			file, _, _ := strings.Cut(e.Site, ":")
			fmt.Fprintf(&w.b, "%s %s (%s): %s\n", e.ID, e.Phase, file, e.Reason)
		}
		if s.Committed {
			w.b.WriteString("transcript committed\n")
		}
	}
	for i, sum := range s.SummaryCalls {
		w.summary(fmt.Sprintf("%s/summary %d", name, i), sum)
	}
	w.lines(name+"/disabled", s.Disabled)
	w.lines(name+"/reminded", s.Reminded)
	if s.Cache != "" {
		w.section2(name, "/cache")
		w.b.WriteString(oneLineText(s.Cache) + "\n")
	}
	if req := s.Request; req != nil {
		var prevReq *Request
		if prev != nil {
			prevReq = prev.Request
		}
		w.section2(name, "/system")
		switch {
		case req.System == "":
			w.b.WriteString("(none)\n")
		case prevReq != nil && w.red(prevReq.System) == w.red(req.System):
			w.asIn(prev.Step)
		default:
			w.text(req.System)
		}
		w.section2(name, "/tools")
		if len(req.Tools) == 0 {
			w.b.WriteString("(none)\n")
		}
		for _, t := range req.Tools {
			w.tool(s.Step, t)
		}
		if o := req.Output; o != nil {
			w.output(name, s.Step, o)
		}
		w.section2(name, "/messages")
		w.messages(req.Messages, prevReq, prev)
	}
	if r := s.Response; r != nil && len(s.Decisions) == 0 { // a decided step's reply is its paused record's
		w.section2(name, "/reply")
		if s.Finish != "" {
			w.str("finish: ", s.Finish, "\n")
		}
		if r.Refusal != "" {
			w.field("", "refusal", r.Refusal)
		}
		w.message("", r.Message)
	}
	for _, a := range s.Agents {
		w.agent(name, a)
	}
	if len(s.Results) > 0 {
		w.section2(name, "/results")
		for _, r := range s.Results {
			w.str(r.CallID, " ", r.Name, " ")
			w.oneLine(r.Arguments)
			if r.IsError {
				w.b.WriteString(" (error)")
			}
			w.b.WriteString("\n")
			w.field("  ", "content", r.Content)
		}
	}
	if s.Answer != "" {
		w.section2(name, "/answer")
		w.b.WriteString(w.red(oneLine(s.Answer)) + "\n")
	}
	if len(s.Awaiting) > 0 {
		w.section2(name, "/awaiting")
		for _, a := range s.Awaiting {
			fmt.Fprintf(&w.b, "%s %s %s\n", a.CallID, a.Tool, w.red(oneLine(a.Arguments)))
		}
	}
	if s.State != nil {
		w.section2(name, "/state")
		if len(s.State) == 0 {
			w.b.WriteString("(empty)\n")
		}
		for _, k := range slices.Sorted(maps.Keys(s.State)) {
			w.field("", k, stateValue(s.State[k]))
		}
	}
}

// lines writes a section of one line an item, if there is any.
func (w *writer) lines(section string, items []string) {
	if len(items) == 0 {
		return
	}
	w.section(section)
	for _, it := range items {
		w.b.WriteString(it + "\n")
	}
}

// summary writes a summary request and its answer as one section.
func (w *writer) summary(section string, sum Summary) {
	w.section(section)
	if sum.System != "" {
		w.field("", "system", sum.System)
	}
	for _, m := range sum.Messages {
		w.field("", string(m.Role), m.Content)
	}
	if sum.Error != "" {
		w.field("", "error", noLines(sum.Error))
	}
	if sum.Answered {
		w.field("", "summary", sum.Text)
	}
}

// agent writes the steps of a sub-agent that a tool call of the step
// named parent ran, as sections named "parent/agent NAME CALLID/step N/…",
// then an end section with its step count and error. References to earlier
// steps ("as in step N") stay within the sub-agent's steps.
func (w *writer) agent(parent string, a Agent) {
	sub := &writer{schemas: map[string]shown{}, red: w.red, plain: w.plain, prefix: fmt.Sprintf("%s/agent %s %s/", parent, a.Name, a.CallID)}
	var prev *Step
	for i := range a.Steps {
		s := &a.Steps[i]
		sub.step(s, prev)
		prev = s
	}
	sub.section(sub.prefix + "end")
	fmt.Fprintf(&sub.b, "steps: %d\n", len(a.Steps))
	if a.Error != "" {
		sub.field("", "error", noLines(a.Error))
	}
	w.b.WriteString(sub.b.String())
}

// output writes the typed answer a request asks for: its name, Go type and
// mode, and its schema unless it is the answer tool's (listed with the
// tools) or the same as at an earlier step.
func (w *writer) output(name string, step int, o *Output) {
	w.section2(name, "/output")
	w.str(o.Name, " (", o.Type, ", ", o.Mode, "): ", oneLineText(o.Description), "\n")
	if o.Mode == "tool" {
		w.b.WriteString("  schema: (the tool's)\n")
		return
	}
	w.schema(outputKey+o.Name, step, o.Schema)
}

// outputKey prefixes the name of an output among the tools' in
// writer.schemas.
const outputKey = "\x00output "

func (w *writer) tool(step int, t Tool) {
	w.str(t.Name, ": ", oneLineText(t.Description), "\n")
	w.schema(t.Name, step, t.Schema)
}

// schema writes the schema of key, or "(as in step N)" when it is the
// one written last for key.
func (w *writer) schema(key string, step int, raw string) {
	if last, same := w.seen(key, step, raw); same {
		w.b.WriteString("  schema: ")
		w.asIn(last)
		return
	}
	w.field("  ", "schema", w.schemas[key].schema)
}

// seen notes that step shows the schema raw of key: same when it is the
// one shown last for key, at step last; otherwise it is now.
func (w *writer) seen(key string, step int, raw string) (last int, same bool) {
	prev, ok := w.schemas[key]
	if ok && prev.raw == raw { // the same text makes the same schema: no need to indent it
		return prev.step, true
	}
	schema := w.red(indentJSON(raw))
	if ok && prev.schema == schema {
		return prev.step, true
	}
	w.schemas[key] = shown{step, schema, raw}
	return step, false
}

func (w *writer) messages(msgs []defs.Message, prevReq *Request, prev *Step) {
	if len(msgs) == 0 {
		w.b.WriteString("(none)\n")
		return
	}
	same := 0
	if prevReq != nil {
		for same < len(msgs) && same < len(prevReq.Messages) && w.redMessage(msgs[same]).Identical(w.redMessage(prevReq.Messages[same])) {
			same++
		}
	}
	switch {
	case same == 1:
		w.b.WriteString("[0] ")
		w.asIn(prev.Step)
	case same > 1:
		w.str("[0-", strconv.Itoa(same-1), "] ")
		w.asIn(prev.Step)
	}
	for i := same; i < len(msgs); i++ {
		m := msgs[i]
		w.str("[", strconv.Itoa(i), "] ", string(m.Role))
		if m.ToolCallID != "" {
			w.b.WriteString(" " + m.ToolCallID)
		}
		if m.Name != "" {
			w.b.WriteString(" " + m.Name)
		}
		if m.IsError {
			w.b.WriteString(" (error)")
		}
		w.b.WriteString("\n")
		w.message("  ", m)
	}
}

// message writes the body of a message (not its role, id, name).
func (w *writer) message(indent string, m defs.Message) {
	for _, k := range slices.Sorted(maps.Keys(m.Meta)) {
		w.field(indent, "meta", k+"="+m.Meta[k])
	}
	if m.Reasoning != "" {
		w.field(indent, "reasoning", m.Reasoning)
	}
	if m.Content != "" {
		w.field(indent, "content", m.Content)
	}
	for _, c := range m.ToolCalls {
		w.str(indent, "call: ", c.ID, " ", c.Name, " ")
		w.oneLine(string(c.Arguments))
		w.b.WriteByte('\n')
	}
}

// OneLine returns raw JSON compacted to one line, or the raw text quoted
// when it is not valid JSON (or is empty): how a golden file shows
// arguments and answers.
func OneLine(raw []byte) string { return oneLine(string(raw)) }

func oneLine(raw string) string {
	var b bytes.Buffer
	if raw == "" || json.Compact(&b, []byte(raw)) != nil {
		return fmt.Sprintf("%q", raw)
	}
	return b.String()
}

// oneLineText returns s with its line breaks written as \n.
func oneLineText(s string) string { return strings.ReplaceAll(s, "\n", `\n`) }

// indented remembers the schemas indentJSON indented last: the same tools
// are written again and again (each run of an eval, each failing step a
// report shows), and json.Indent was a fifth of the cost of a step. It
// holds at most 256 schemas and 1 MB of them, and starts again when full.
var indented struct {
	sync.Mutex
	m     map[string]string
	bytes int
}

func indentJSON(raw string) string {
	indented.Lock()
	out, ok := indented.m[raw]
	indented.Unlock()
	if ok {
		return out
	}
	out = indentJSONOnce(raw)
	size := len(raw) + len(out)
	if size > 64<<10 {
		return out // not worth holding
	}
	indented.Lock()
	if len(indented.m) >= 256 || indented.bytes+size > 1<<20 {
		indented.m, indented.bytes = nil, 0
	}
	if indented.m == nil {
		indented.m = map[string]string{}
	}
	indented.m[raw] = out
	indented.bytes += size
	indented.Unlock()
	return out
}

func indentJSONOnce(raw string) string {
	var b bytes.Buffer
	if raw == "" || json.Indent(&b, []byte(raw), "", "  ") != nil {
		return fmt.Sprintf("%q", raw)
	}
	return b.String()
}

// StateValue renders a state value as the compact JSON that Step.State
// holds (map keys sorted by encoding/json), or "(not JSON: ...)".
func StateValue(v any) string {
	out, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("(not JSON: %v)", err)
	}
	return string(out)
}

// stateValue writes a state value: on one line when short, indented
// otherwise.
func stateValue(v string) string {
	if len(v) <= 100 || !json.Valid([]byte(v)) {
		return v
	}
	return indentJSONOnce(v) // not remembered: state values seldom repeat
}
