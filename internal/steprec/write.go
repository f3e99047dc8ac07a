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
	w := newWriter(o.Redact, "")
	defer w.free()
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
	text := w.b.Bytes()
	if !w.plain {
		text = []byte(w.red(string(text)))
	}
	out := make([]byte, 0, len(Header)+1+len(text))
	return append(append(append(out, Header...), '\n'), text...)
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
	w := newWriter(o.Redact, "")
	defer w.free()
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
	return w.red(w.b.String())
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
	b       bytes.Buffer
	schemas map[string]shown    // last schema shown per tool name
	red     func(string) string // applies the redactions
	plain   bool                // there are none: red returns its argument
	prefix  string              // of section names: "" or a sub-agent's "step N/agent NAME ID/"
	// compact holds where in b are the last texts oneLine found compact
	// (see compact), at most 8: the arguments of a call come again in its
	// result, and are often the typed answer.
	compact [][2]int
}

// writers holds the writers done with, and their buffers: the text of a
// step is written again and again (each failing check of an eval shows
// its step), and growing a buffer and a map for each was a third of the
// bytes allocated.
var writers = sync.Pool{New: func() any { return &writer{schemas: map[string]shown{}} }}

// newWriter returns a writer of sections named prefix+"step N/...", with
// the redactions of red (none if nil), to give back with free.
func newWriter(red func(string) string, prefix string) *writer {
	w := writers.Get().(*writer)
	w.red, w.plain, w.prefix = red, red == nil, prefix
	if w.plain {
		w.red = noRedaction
	}
	return w
}

func noRedaction(s string) string { return s }

// free gives w back to writers, unless it grew large: its text must have
// been copied.
func (w *writer) free() {
	if w.b.Cap() > 64<<10 || len(w.schemas) > 64 {
		return
	}
	w.b.Reset()
	clear(w.schemas)
	w.compact = w.compact[:0]
	w.red = nil
	writers.Put(w)
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

// oneLine writes raw as OneLine returns it.
func (w *writer) oneLine(raw string) {
	n := w.b.Len()
	w.b.WriteString(raw)
	w.oneLineFrom(n)
}

// oneLineBytes writes raw as OneLine returns it.
func (w *writer) oneLineBytes(raw []byte) {
	n := w.b.Len()
	w.b.Write(raw)
	w.oneLineFrom(n)
}

// oneLineFrom makes the text written from n on what OneLine returns of
// it: as it is when it is compact already (see compact), as one of the
// texts written before was found.
func (w *writer) oneLineFrom(n int) {
	b := w.b.Bytes()
	text := b[n:]
	for _, c := range w.compact {
		if bytes.Equal(b[c[0]:c[1]], text) {
			return
		}
	}
	if compact(text) {
		if len(w.compact) == 8 {
			w.compact = append(w.compact[:0], w.compact[1:]...)
		}
		w.compact = append(w.compact, [2]int{n, len(b)})
		return
	}
	raw := string(text)
	w.b.Truncate(n)
	if raw == "" || json.Compact(&w.b, []byte(raw)) != nil {
		w.b.Write(strconv.AppendQuote(w.b.AvailableBuffer(), raw))
	}
}

// redOneLine writes raw as OneLine returns it, with the redactions
// applied.
func (w *writer) redOneLine(raw string) {
	if w.plain {
		w.oneLine(raw)
		return
	}
	w.b.WriteString(w.red(oneLine(raw)))
}

// compact reports whether raw is what json.Compact makes of it: valid
// JSON without any space, tab or line break, inside strings or out, the
// only bytes that Compact leaves out (HTML characters are not escaped).
// Not the case of JSON with a space in a string: Compact decides.
func compact(raw []byte) bool {
	return len(raw) > 0 && !bytes.ContainsAny(raw, " \t\r\n") && json.Valid(raw)
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
// marker, and those that would read as escaped ones (see escaped). A text
// that ends with a line break ends with an empty line.
func (w *writer) text(s string) {
	for line := range strings.SplitSeq(s, "\n") {
		if isMarker(strings.TrimLeft(line, `\`)) {
			w.b.WriteByte('\\')
		}
		w.str(line, "\n")
	}
}

// field writes "indent label: value", or for a multi-line value
// "indent label: |" and the lines indented two more spaces: a value that
// ends with a line break ends with an empty line, so that a golden file
// shows that line break.
func (w *writer) field(indent, label, value string) {
	if !strings.Contains(value, "\n") {
		w.str(indent, label, ": ", value, "\n")
		return
	}
	w.str(indent, label, ": |\n")
	for line := range strings.SplitSeq(value, "\n") {
		if line != "" {
			w.str(indent, "  ")
		}
		w.str(line, "\n")
	}
}

func isMarker(line string) bool {
	return strings.HasPrefix(line, "-- ") && strings.HasSuffix(line, " --") && len(line) >= 6
}

// stepNames are the section names of the first steps of a run: "step 0",
// "step 1", ..., made once rather than for each text of a step.
var stepNames = func() (names [64]string) {
	for i := range names {
		names[i] = "step " + strconv.Itoa(i)
	}
	return names
}()

// stepName returns the name of the sections of step n: w.prefix+"step n".
func (w *writer) stepName(n int) string {
	if w.prefix == "" && n >= 0 && n < len(stepNames) {
		return stepNames[n]
	}
	return w.prefix + "step " + strconv.Itoa(n)
}

func (w *writer) step(s, prev *Step) {
	name := w.stepName(s.Step)
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
	w.items(name, "/disabled", s.Disabled)
	w.items(name, "/reminded", s.Reminded)
	if s.Cache != "" {
		w.section2(name, "/cache")
		w.str(oneLineText(s.Cache), "\n")
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
		w.redOneLine(s.Answer)
		w.b.WriteByte('\n')
	}
	if len(s.Awaiting) > 0 {
		w.section2(name, "/awaiting")
		for _, a := range s.Awaiting {
			w.str(a.CallID, " ", a.Tool, " ")
			w.redOneLine(a.Arguments)
			w.b.WriteByte('\n')
		}
	}
	if s.State != nil {
		w.section2(name, "/state")
		if len(s.State) == 0 {
			w.b.WriteString("(empty)\n")
		}
		for _, k := range sortedKeys(s.State) {
			w.field("", k, stateValue(s.State[k]))
		}
	}
}

// items writes a section named name+part of one line an item, if there
// is any.
func (w *writer) items(name, part string, items []string) {
	if len(items) == 0 {
		return
	}
	w.section2(name, part)
	for _, it := range items {
		w.str(it, "\n")
	}
}

// sortedKeys returns the keys of m, sorted; nil, without allocating, when
// there are none.
func sortedKeys(m map[string]string) []string {
	if len(m) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(m))
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
	var red func(string) string
	if !w.plain {
		red = w.red
	}
	sub := newWriter(red, fmt.Sprintf("%s/agent %s %s/", parent, a.Name, a.CallID))
	defer sub.free()
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
	w.b.Write(sub.b.Bytes())
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
			w.str(" ", m.ToolCallID)
		}
		if m.Name != "" {
			w.str(" ", m.Name)
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
	for _, k := range sortedKeys(m.Meta) {
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
		w.oneLineBytes(c.Arguments)
		w.b.WriteByte('\n')
	}
}

// OneLine returns raw JSON compacted to one line, or the raw text quoted
// when it is not valid JSON (or is empty): how a golden file shows
// arguments and answers.
func OneLine(raw []byte) string {
	if compact(raw) {
		return string(raw)
	}
	return oneLine(string(raw))
}

func oneLine(raw string) string {
	var b bytes.Buffer
	if raw == "" || json.Compact(&b, []byte(raw)) != nil {
		return strconv.Quote(raw)
	}
	return b.String()
}

// oneLineText returns s with its line breaks written as \n.
func oneLineText(s string) string { return strings.ReplaceAll(s, "\n", `\n`) }

// memo is a bounded map of texts made from texts, for the schemas that
// are written again and again (each run of an eval, each failing step a
// report shows). It holds at most 256 texts and 1 MB of keys and texts,
// and starts again when full.
type memo struct {
	sync.Mutex
	m     map[string]string
	bytes int
}

func (c *memo) load(key string) (string, bool) {
	c.Lock()
	defer c.Unlock()
	v, ok := c.m[key]
	return v, ok
}

// loadBytes is load of string(key), without a copy of key.
func (c *memo) loadBytes(key []byte) (string, bool) {
	c.Lock()
	defer c.Unlock()
	v, ok := c.m[string(key)]
	return v, ok
}

func (c *memo) store(key, v string) {
	size := len(key) + len(v)
	if size > 64<<10 {
		return // not worth holding
	}
	c.Lock()
	defer c.Unlock()
	if len(c.m) >= 256 || c.bytes+size > 1<<20 {
		c.m, c.bytes = nil, 0
	}
	if c.m == nil {
		c.m = map[string]string{}
	}
	c.m[key] = v
	c.bytes += size
}

// indented remembers the schemas indentJSON indented last: json.Indent
// was a fifth of the cost of a step.
var indented memo

func indentJSON(raw string) string {
	if out, ok := indented.load(raw); ok {
		return out
	}
	out := indentJSONOnce(raw)
	indented.store(raw, out)
	return out
}

// schemaTexts remembers the schemas SchemaText returned last.
var schemaTexts memo

// SchemaText returns raw, the schema of a tool or of a typed answer, as a
// string: the same string, not a copy, for the same schema as last time,
// so that the records of a run's steps (runtime.Step.Record) share the
// text of their tools' schemas. A copy of raw, if it is over 32 kB.
func SchemaText(raw []byte) string {
	if s, ok := schemaTexts.loadBytes(raw); ok {
		return s
	}
	s := string(raw)
	schemaTexts.store(s, s)
	return s
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
