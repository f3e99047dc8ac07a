package steprec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
)

// ParseError reports text that is not a golden step file, or one damaged
// at Line (1-based; 0 when the whole text is at fault).
type ParseError struct {
	Line   int
	Reason string
}

func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Reason)
	}
	return e.Reason
}

// section is one file of a golden txtar archive.
type section struct {
	name  string
	line  int // line of its marker
	lines []string
}

var (
	reEffect  = regexp.MustCompile(`^(\S+) (\S+) \(([^)]*)\): (.*)$`)
	reSame    = regexp.MustCompile(`^\[(\d+)(?:-(\d+))?\] \(as in step -?\d+\)$`)
	reMessage = regexp.MustCompile(`^\[(\d+)\] (\S+)(.*)$`)
	reAsIn    = regexp.MustCompile(`^\(as in step -?\d+\)$`)
	reOutput  = regexp.MustCompile(`^(.*) \((.*), (.*)\): (.*)$`)
)

// Parse reads a golden step file, as Write writes it. Its records hold
// everything the text shows, with every "(as in step N)" resolved; the
// measures a golden file leaves out are zero. Line ends "\r\n" read as
// "\n". Text without the header, a section the format does not have or a
// line it cannot read is a *ParseError; Parse does not panic, whatever
// the text.
//
// A *ParseError after the header comes with what was read before it: a
// Run whose steps are those whose sections came before the damage (the
// last of them may lack the sections after it, and a file cut short lacks
// its end: Err is empty and skipped steps are not counted), for a reader
// that shows what it can of a damaged file.
func Parse(data []byte) (*Run, error) {
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	first, _, _ := strings.Cut(text, "\n")
	if first != Header {
		return nil, &ParseError{Line: 1, Reason: fmt.Sprintf("not a golden step file: it starts with %q, not %q", trunc(first, 40), Header)}
	}
	var secs []*section
	// Every line of a section is the section's: a blank line at its end
	// is the line break that ends a value (Write writes "a\n" as the
	// lines "a" and ""), but for the line break that ends the file.
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n")[1:] {
		if isMarker(line) {
			secs = append(secs, &section{name: strings.TrimSpace(line[3 : len(line)-3]), line: i + 2})
			continue
		}
		if len(secs) == 0 {
			continue // the archive's comment
		}
		if escaped(line) {
			line = line[1:]
		}
		cur := secs[len(secs)-1]
		cur.lines = append(cur.lines, line)
	}
	p := &parser{run: &Run{}, top: newLevel("", "")}
	for _, s := range secs {
		if p.ended {
			return p.run, p.errf(s, -1, "a section after the end")
		}
		if err := p.section(s); err != nil {
			return p.partial(), err
		}
	}
	if !p.ended {
		return p.partial(), &ParseError{Reason: "no end section: the file is cut short"}
	}
	return p.run, nil
}

// escaped reports a line of text that Write escaped with a backslash: a
// section marker once its leading backslashes are removed. Write adds one
// to such a line, so the line \\-- x -- reads as the text \-- x --, and
// the line \-- x as itself.
func escaped(line string) bool {
	return strings.HasPrefix(line, `\`) && isMarker(strings.TrimLeft(line, `\`))
}

// partial returns the run read so far, before its end section.
func (p *parser) partial() *Run {
	if !p.ended {
		p.run.Steps = p.top.build()
	}
	return p.run
}

type parser struct {
	run   *Run
	top   *level
	ended bool
}

// level is the steps of the run or of a sub-agent, the schemas shown so
// far among them by tool name, and the sub-agents of each step.
type level struct {
	name, callID string // the sub-agent's; "" for the run
	steps        []*Step
	schemas      map[string]string
	subs         map[*Step][]*level
	errText      string
	ended        bool
}

func newLevel(name, callID string) *level {
	return &level{name: name, callID: callID, schemas: map[string]string{}, subs: map[*Step][]*level{}}
}

// build sets the Agents of the steps of lv from their levels, and returns
// the steps.
func (lv *level) build() []*Step {
	for _, s := range lv.steps {
		for _, sub := range lv.subs[s] {
			a := Agent{Name: sub.name, CallID: sub.callID, Error: sub.errText}
			for _, ss := range sub.build() {
				a.Steps = append(a.Steps, *ss)
			}
			s.Agents = append(s.Agents, a)
		}
	}
	return lv.steps
}

func (p *parser) errf(s *section, off int, format string, args ...any) error {
	return &ParseError{Line: s.line + 1 + off, Reason: fmt.Sprintf("section %q: ", s.name) + fmt.Sprintf(format, args...)}
}

// section adds one section to the run: its name is a path of steps and
// agents, "step 0/agent NAME CALL/step 1/messages".
func (p *parser) section(s *section) error {
	parts := strings.Split(s.name, "/")
	lv := p.top
	var step *Step
	for i, part := range parts {
		last := i == len(parts)-1
		switch {
		case strings.HasPrefix(part, "step ") && !last:
			if lv.ended {
				return p.errf(s, -1, "a step after its end section")
			}
			// "step N decided" is the record that completes a step paused
			// for approvals: a step of its own, which starts with its
			// decisions.
			num, decided := strings.CutSuffix(strings.TrimPrefix(part, "step "), " decided")
			n, err := strconv.Atoi(num)
			if err != nil || strconv.Itoa(n) != num {
				return p.errf(s, -1, "bad step number %q", part)
			}
			decisions := i == len(parts)-2 && parts[i+1] == "decisions"
			// A resumed step (one a crash cut short after the model's
			// reply, completed by a resume) starts with its resumed
			// section, a record of its own beside the attempt's; a
			// decided one starts with its decisions, then says it was
			// resumed.
			resumed := i == len(parts)-2 && parts[i+1] == "resumed" && !decided
			if k := len(lv.steps); k > 0 && lv.steps[k-1].Step == n && isDecided(lv.steps[k-1]) == decided && !decisions && !resumed {
				step = lv.steps[k-1]
				break
			}
			if decided != decisions {
				return p.errf(s, -1, "a decided step starts with its decisions, and only it has decisions")
			}
			step = &Step{Step: n}
			lv.steps = append(lv.steps, step)
		case strings.HasPrefix(part, "agent ") && step != nil && !last:
			f := strings.Split(strings.TrimPrefix(part, "agent "), " ")
			if len(f) != 2 || f[0] == "" || f[1] == "" {
				return p.errf(s, -1, "bad agent %q", part)
			}
			subs := lv.subs[step]
			if k := len(subs); k > 0 && subs[k-1].name == f[0] && subs[k-1].callID == f[1] && !subs[k-1].ended {
				lv = subs[k-1]
			} else {
				sub := newLevel(f[0], f[1])
				lv.subs[step] = append(subs, sub)
				lv = sub
			}
			step = nil
		case last && part == "end":
			if lv.ended {
				return p.errf(s, -1, "a second end section")
			}
			if lv == p.top && len(parts) != 1 {
				return p.errf(s, -1, "not a section of a golden step file")
			}
			lv.ended = true
			count := -1
			for _, f := range fields(s.lines, "") {
				switch f.label {
				case "steps":
					n, err := strconv.Atoi(f.value)
					if err != nil || n < len(lv.steps) || n > len(lv.steps)+1<<16 || count >= 0 {
						return p.errf(s, f.line, "bad step count %q", f.value)
					}
					count = n
				case "paused": // what the last step's awaiting section says
				case "":
					if f.value != "" { // blank lines at the end of the file are not
						return p.errf(s, f.line, "unknown line %q", trunc(f.value, 60))
					}
				case "error":
					lv.errText = f.value
				default:
					return p.errf(s, f.line, "unknown line %q", trunc(f.value, 60))
				}
			}
			if count < 0 {
				return p.errf(s, -1, "no step count")
			}
			if lv == p.top {
				p.run.Err = lv.errText
				p.run.Steps = lv.build()
				for len(p.run.Steps) < count {
					p.run.Steps = append(p.run.Steps, nil) // steps Write skipped
				}
				p.ended = true
			}
			return nil
		case last && step != nil:
			return p.stepSection(s, lv, step, part)
		default:
			return p.errf(s, -1, "not a section of a golden step file")
		}
	}
	return p.errf(s, -1, "not a section of a golden step file")
}

func isDecided(s *Step) bool { return len(s.Decisions) > 0 }

// prev returns the step before the last of lv that the writer refers to
// with "(as in step N)": for the run, the last one that sent a request;
// for a sub-agent, the one before.
func (lv *level) prev() *Step {
	for i := len(lv.steps) - 2; i >= 0; i-- {
		if lv != nil && (lv.name != "" || lv.steps[i].Request != nil) {
			return lv.steps[i]
		}
	}
	return nil
}

func (p *parser) stepSection(s *section, lv *level, step *Step, kind string) error {
	prev := lv.prev()
	switch {
	case kind == "decisions":
		var rest []string // the lines of approved and denied calls, read by fields
		flush := func() error {
			for _, f := range fields(rest, "") {
				l := f.label
				if l == "" {
					l = f.value
				}
				w := strings.Split(l, " ")
				if len(w) != 3 || (w[2] != "approved" && w[2] != "denied") {
					return p.errf(s, f.line, "want a decision \"call tool approved|denied|answered\", got %q", trunc(l, 60))
				}
				d := Decision{CallID: w[0], Tool: w[1], Approved: w[2] == "approved"}
				if !d.Approved {
					d.Reason = f.value
				}
				step.Decisions = append(step.Decisions, d)
			}
			rest = rest[:0]
			return nil
		}
		for i, l := range s.lines {
			w := strings.SplitN(l, " ", 4)
			if len(w) < 4 || w[2] != "answered" {
				rest = append(rest, l)
				continue
			}
			if err := flush(); err != nil {
				return err
			}
			d := Decision{CallID: w[0], Tool: w[1], Approved: true}
			if err := json.Unmarshal([]byte(w[3]), &d.Asked); err != nil || len(d.Asked) == 0 {
				return p.errf(s, i, "want the questions and answers of an answered call as JSON, got %q", trunc(w[3], 60))
			}
			step.Decisions = append(step.Decisions, d)
		}
		if err := flush(); err != nil {
			return err
		}
		if len(step.Decisions) == 0 {
			return p.errf(s, -1, "no decisions")
		}
	case kind == "resumed":
		if step.Resumed {
			return p.errf(s, -1, "a second resumed section")
		}
		step.Resumed = true
		for _, f := range fields(s.lines, "") {
			switch {
			case f.label != "interrupted":
				return p.errf(s, f.line, "want \"interrupted: call\" or \"interrupted: (none)\", got %q", trunc(f.value, 60))
			case f.value == "(none)" && len(s.lines) == 1:
			case f.value == "" || f.value == "(none)" || strings.ContainsAny(f.value, " \n"):
				return p.errf(s, f.line, "want a call id, got %q", trunc(f.value, 60))
			default:
				step.Interrupted = append(step.Interrupted, f.value)
			}
		}
		if len(s.lines) == 0 {
			return p.errf(s, -1, "want \"interrupted: call\" or \"interrupted: (none)\"")
		}
	case kind == "sent":
		if len(s.lines) < 2 {
			return p.errf(s, -1, "want \"turn N\" and the messages sent")
		}
		n, err := strconv.Atoi(strings.TrimPrefix(s.lines[0], "turn "))
		if err != nil || !strings.HasPrefix(s.lines[0], "turn ") || n < 0 {
			return p.errf(s, 0, "want \"turn N\", got %q", trunc(s.lines[0], 60))
		}
		step.Turn = n
		for i, l := range s.lines[1:] {
			text, err := strconv.Unquote(strings.TrimPrefix(l, "user: "))
			if err != nil || !strings.HasPrefix(l, "user: ") {
				return p.errf(s, i+1, "want a message sent, user: \"...\", got %q", trunc(l, 60))
			}
			step.Sent = append(step.Sent, text)
		}
	case kind == "effects":
		for i, l := range s.lines {
			if l == "transcript committed" {
				step.Committed = true
				continue
			}
			m := reEffect.FindStringSubmatch(l)
			if m == nil {
				return p.errf(s, i, "want an effect \"id phase (file): why\", got %q", trunc(l, 60))
			}
			step.Effects = append(step.Effects, effects.Ran{ID: m[1], Phase: parsePhase(m[2]), Site: m[3], Reason: parseReason(m[4])})
		}
	case strings.HasPrefix(kind, "summary "):
		var sum Summary
		for _, f := range fields(s.lines, "") {
			switch f.label {
			case "system":
				sum.System = f.value
			case "error":
				sum.Error = f.value
			case "summary":
				sum.Text, sum.Answered = f.value, true
			case "":
				return p.errf(s, f.line, "want a field \"label: value\", got %q", trunc(f.value, 60))
			default:
				sum.Messages = append(sum.Messages, defs.Message{Role: defs.Role(f.label), Content: f.value})
			}
		}
		step.SummaryCalls = append(step.SummaryCalls, sum)
		step.Summaries = len(step.SummaryCalls)
	case kind == "disabled":
		step.Disabled = append(step.Disabled, s.lines...)
	case kind == "reminded":
		step.Reminded = append(step.Reminded, s.lines...)
	case kind == "cache":
		if len(s.lines) != 1 || s.lines[0] == "" {
			return p.errf(s, -1, "want one line saying why the prefix broke")
		}
		step.Cache = strings.ReplaceAll(s.lines[0], `\n`, "\n")
	case kind == "system":
		req := request(step)
		text := strings.Join(s.lines, "\n")
		switch {
		case text == "(none)":
			text = ""
		case reAsIn.MatchString(text):
			if prev == nil || prev.Request == nil {
				return p.errf(s, 0, "%q refers to a step that sent no request", text)
			}
			text = prev.Request.System
		}
		req.System = text
	case kind == "tools":
		req := request(step)
		step.Tools = []string{}
		req.Tools = []Tool{}
		for i := 0; i < len(s.lines); i++ {
			l := s.lines[i]
			if l == "(none)" && i == 0 {
				continue
			}
			name, desc, ok := strings.Cut(l, ": ")
			if !ok {
				name, ok = strings.CutSuffix(l, ":")
			}
			if !ok || strings.HasPrefix(l, " ") {
				return p.errf(s, i, "want a tool \"name: description\", got %q", trunc(l, 60))
			}
			t := Tool{Name: name, Description: strings.ReplaceAll(desc, `\n`, "\n")}
			j := i + 1
			for j < len(s.lines) && (strings.HasPrefix(s.lines[j], "  ") || s.lines[j] == "") {
				j++
			}
			schema, err := p.schema(s, lv, i+1, s.lines[i+1:j], name)
			if err != nil {
				return err
			}
			t.Schema = schema
			req.Tools = append(req.Tools, t)
			step.Tools = append(step.Tools, name)
			i = j - 1
		}
		if len(step.Tools) == 0 {
			step.Tools, req.Tools = nil, nil
		}
	case kind == "output":
		if len(s.lines) == 0 {
			return p.errf(s, -1, "no output")
		}
		m := reOutput.FindStringSubmatch(s.lines[0])
		if m == nil {
			return p.errf(s, 0, "want \"name (type, mode): description\", got %q", trunc(s.lines[0], 60))
		}
		o := &Output{Name: m[1], Type: m[2], Mode: m[3], Description: strings.ReplaceAll(m[4], `\n`, "\n")}
		if o.Mode == "tool" {
			if len(s.lines) != 2 || s.lines[1] != "  schema: (the tool's)" {
				return p.errf(s, 1, "want \"  schema: (the tool's)\"")
			}
		} else {
			schema, err := p.schema(s, lv, 1, s.lines[1:], outputKey+o.Name)
			if err != nil {
				return err
			}
			o.Schema = schema
		}
		request(step).Output = o
	case kind == "messages":
		return p.messages(s, step, prev)
	case kind == "reply":
		r := &Response{Message: defs.Message{Role: defs.RoleAssistant}}
		rest := s.lines
		if len(rest) > 0 && strings.HasPrefix(rest[0], "finish: ") {
			step.Finish = strings.TrimPrefix(rest[0], "finish: ")
			rest = rest[1:]
		}
		fs := fields(rest, "")
		if len(fs) > 0 && fs[0].label == "refusal" {
			r.Refusal = fs[0].value
			fs = fs[1:]
		}
		if err := p.body(s, 1+len(s.lines)-len(rest), fs, &r.Message); err != nil {
			return err
		}
		step.Response = r
	case kind == "results":
		return p.results(s, step)
	case kind == "answer":
		if len(s.lines) != 1 {
			return p.errf(s, -1, "want one line")
		}
		step.Answer = raw(s.lines[0])
	case kind == "awaiting":
		for i, l := range s.lines {
			w := strings.SplitN(l, " ", 3)
			if len(w) != 3 {
				return p.errf(s, i, "want \"call tool arguments\", got %q", trunc(l, 60))
			}
			step.Awaiting = append(step.Awaiting, Awaiting{CallID: w[0], Tool: w[1], Arguments: raw(w[2])})
		}
	case kind == "state":
		step.State = map[string]string{}
		for _, f := range fields(s.lines, "") {
			if f.label == "" {
				if f.value == "(empty)" && len(s.lines) == 1 {
					continue
				}
				return p.errf(s, f.line, "want \"key: value\", got %q", trunc(f.value, 60))
			}
			step.State[f.label] = compactJSON(f.value)
		}
	default:
		return p.errf(s, -1, "unknown section %q", kind)
	}
	return nil
}

// schema reads a "  schema: ..." field of the tool or output key: the
// schema, or "(as in step N)" for the last one shown for key.
func (p *parser) schema(s *section, lv *level, off int, lines []string, key string) (string, error) {
	fs := fields(lines, "  ")
	if len(fs) != 1 || fs[0].label != "schema" {
		return "", p.errf(s, off, "want a schema field")
	}
	v := fs[0].value
	if reAsIn.MatchString(v) {
		last, ok := lv.schemas[key]
		if !ok {
			return "", p.errf(s, off, "%q refers to a schema not shown before", v)
		}
		return last, nil
	}
	schema := raw(compactJSON(v))
	lv.schemas[key] = schema
	return schema, nil
}

// request returns the request of step, making it.
func request(step *Step) *Request {
	if step.Request == nil {
		step.Request = &Request{}
	}
	return step.Request
}

// messages reads a request's messages: "[0-k] (as in step N)" for those
// shared with the previous request, then "[i] role [call name] [(error)]"
// and the fields of each.
func (p *parser) messages(s *section, step, prev *Step) error {
	req := request(step)
	req.Messages = []defs.Message{}
	i := 0
	for i < len(s.lines) {
		l := s.lines[i]
		if l == "(none)" && i == 0 {
			i++
			continue
		}
		if m := reSame.FindStringSubmatch(l); m != nil && i == 0 {
			to, err := strconv.Atoi(m[1])
			if m[2] != "" {
				to, err = strconv.Atoi(m[2])
			}
			if err != nil || prev == nil || prev.Request == nil || to >= len(prev.Request.Messages) {
				return p.errf(s, i, "%q refers to messages the previous step does not have", l)
			}
			req.Messages = append(req.Messages, prev.Request.Messages[:to+1]...)
			i++
			continue
		}
		m := reMessage.FindStringSubmatch(l)
		if m == nil {
			return p.errf(s, i, "want a message header \"[i] role\", got %q", trunc(l, 60))
		}
		msg := defs.Message{Role: defs.Role(m[2])}
		rest := m[3]
		if r, ok := strings.CutSuffix(rest, " (error)"); ok {
			msg.IsError, rest = true, r
		}
		if f := strings.Fields(rest); msg.Role == defs.RoleTool && len(f) >= 1 {
			msg.ToolCallID = f[0]
			if len(f) > 1 {
				msg.Name = strings.Join(f[1:], " ")
			}
		} else if len(f) >= 1 {
			msg.Name = strings.Join(f, " ")
		}
		j := i + 1
		for j < len(s.lines) && (strings.HasPrefix(s.lines[j], "  ") || s.lines[j] == "") {
			j++
		}
		if err := p.body(s, i+1, fields(s.lines[i+1:j], "  "), &msg); err != nil {
			return err
		}
		req.Messages = append(req.Messages, msg)
		i = j
	}
	return nil
}

// results reads tool results: "id name args [(error)]" and a content field.
func (p *parser) results(s *section, step *Step) error {
	i := 0
	for i < len(s.lines) {
		l := s.lines[i]
		isErr := strings.HasSuffix(l, " (error)")
		l = strings.TrimSuffix(l, " (error)")
		f := strings.SplitN(l, " ", 3)
		if len(f) < 3 || strings.HasPrefix(l, " ") {
			return p.errf(s, i, "want a result header \"call-id name arguments\", got %q", trunc(l, 60))
		}
		j := i + 1
		for j < len(s.lines) && (strings.HasPrefix(s.lines[j], "  ") || s.lines[j] == "") {
			j++
		}
		fs := fields(s.lines[i+1:j], "  ")
		if len(fs) != 1 || fs[0].label != "content" {
			return p.errf(s, i+1, "want a content field")
		}
		step.Results = append(step.Results, Result{CallID: f[0], Name: f[1], Arguments: raw(f[2]), Content: fs[0].value, IsError: isErr})
		i = j
	}
	return nil
}

// body reads the fields of a message: meta, reasoning, content, call.
func (p *parser) body(s *section, off int, fs []field, m *defs.Message) error {
	for _, f := range fs {
		switch f.label {
		case "":
			if f.value != "" {
				return p.errf(s, off+f.line, "want a field \"label: value\", got %q", trunc(f.value, 60))
			}
		case "meta":
			k, v, _ := strings.Cut(f.value, "=")
			if m.Meta == nil {
				m.Meta = map[string]string{}
			}
			m.Meta[k] = v
		case "reasoning":
			m.Reasoning = f.value
		case "content":
			m.Content = f.value
		case "call":
			w := strings.SplitN(f.value, " ", 3)
			if len(w) != 3 {
				return p.errf(s, off+f.line, "want a call \"id name arguments\", got %q", trunc(f.value, 60))
			}
			m.ToolCalls = append(m.ToolCalls, defs.ToolCall{ID: w[0], Name: w[1], Arguments: json.RawMessage(raw(w[2]))})
		default:
			return p.errf(s, off+f.line, "unknown field %q", f.label)
		}
	}
	return nil
}

type field struct {
	label, value string
	line         int
}

// fields reads "label: value" lines at indent, and "label: |" followed by
// the value's lines indented two more spaces. A line that is not a field
// is returned with an empty label.
func fields(lines []string, indent string) []field {
	var out []field
	for i := 0; i < len(lines); i++ {
		l := strings.TrimPrefix(lines[i], indent)
		label, value, ok := strings.Cut(l, ": ")
		if !ok || strings.HasPrefix(l, " ") {
			out = append(out, field{value: l, line: i})
			continue
		}
		if value != "|" {
			out = append(out, field{label: label, value: value, line: i})
			continue
		}
		var vs []string
		j := i + 1
		for ; j < len(lines); j++ {
			if lines[j] == "" {
				vs = append(vs, "")
				continue
			}
			v, ok := strings.CutPrefix(lines[j], indent+"  ")
			if !ok {
				break
			}
			vs = append(vs, v)
		}
		out = append(out, field{label: label, value: strings.Join(vs, "\n"), line: i})
		i = j - 1
	}
	return out
}

// parsePhase reads effects.Phase.String.
func parsePhase(s string) effects.Phase {
	if s == effects.AfterReply.String() {
		return effects.AfterReply
	}
	return effects.BeforeCall
}

// parseReason reads effects.Reason.String: "first run", "every step",
// "context too long: recovery", or the changes "name: from → to, ...".
func parseReason(s string) effects.Reason {
	for _, k := range []effects.ReasonKind{effects.ReasonFirst, effects.ReasonAlways, effects.ReasonRecovery} {
		if s == (effects.Reason{Kind: k}).String() {
			return effects.Reason{Kind: k}
		}
	}
	if s == (effects.Reason{}).String() {
		return effects.Reason{}
	}
	r := effects.Reason{Kind: effects.ReasonChanged}
	if s == "" {
		return r
	}
	for part := range strings.SplitSeq(s, ", ") {
		name, rest, _ := strings.Cut(part, ": ")
		from, to, _ := strings.Cut(rest, " → ")
		c := effects.Change{Name: name, From: from, To: to}
		if i, ok := strings.CutPrefix(name, "deps["); ok {
			if n, err := strconv.Atoi(strings.TrimSuffix(i, "]")); err == nil && n >= 0 && strings.HasSuffix(i, "]") && "deps["+strconv.Itoa(n)+"]" == name {
				c.Index, c.Name = n, ""
			}
		}
		r.Changes = append(r.Changes, c)
	}
	return r
}

// raw returns the text that Write wrote as v: v when it is JSON, else
// the text it quoted (Write quotes what is not JSON).
func raw(v string) string {
	if json.Valid([]byte(v)) {
		return v
	}
	if u, err := strconv.Unquote(v); err == nil && strings.HasPrefix(v, `"`) {
		return u
	}
	return v
}

// compactJSON returns v compacted when it is JSON, else v.
func compactJSON(v string) string {
	var b bytes.Buffer
	if json.Compact(&b, []byte(v)) != nil {
		return v
	}
	return b.String()
}

func trunc(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
