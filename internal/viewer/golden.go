package viewer

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// goldenHeader is the first line of a golden step file (snapshots.Header).
const goldenHeader = "reprompt snapshot v1"

// FormatError reports a file that is not what it was read as: not a
// golden step file nor a recording, or one damaged at Line (1-based; 0 when
// the whole file is at fault).
type FormatError struct {
	Path   string
	Line   int
	Reason string
}

func (e *FormatError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Reason)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Reason)
}

// section is one file of a golden txtar archive.
type section struct {
	name  string
	line  int // line of its marker
	lines []string
}

var (
	reEffect  = regexp.MustCompile(`^(\S+) (\S+) \(([^)]*)\): (.*)$`)
	reSame    = regexp.MustCompile(`^\[(\d+)(?:-(\d+))?\] \(as in step \d+\)$`)
	reMessage = regexp.MustCompile(`^\[(\d+)\] (\S+)(.*)$`)
	reAsIn    = regexp.MustCompile(`^\(as in step \d+\)$`)
)

// FromGolden reads a golden step file, as package snapshots writes it.
// Its steps hold everything the file shows; durations and the runtime's
// prefix counts are not in the format. A file without the header is a
// *FormatError, as is a section the format does not have.
func FromGolden(path string, data []byte) (*Run, error) {
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	first, _, _ := strings.Cut(text, "\n")
	if first != goldenHeader {
		return nil, &FormatError{Path: path, Line: 1, Reason: fmt.Sprintf("not a golden step file: it starts with %q, not %q", trunc(first, 40), goldenHeader)}
	}
	var secs []*section
	for i, line := range strings.Split(text, "\n")[1:] {
		if strings.HasPrefix(line, "-- ") && strings.HasSuffix(line, " --") && len(line) >= 6 {
			secs = append(secs, &section{name: strings.TrimSpace(line[3 : len(line)-3]), line: i + 2})
			continue
		}
		if len(secs) == 0 {
			continue // the archive's comment
		}
		if strings.HasPrefix(line, `\-- `) {
			line = line[1:]
		}
		cur := secs[len(secs)-1]
		cur.lines = append(cur.lines, line)
	}
	for _, s := range secs {
		for len(s.lines) > 0 && s.lines[len(s.lines)-1] == "" {
			s.lines = s.lines[:len(s.lines)-1]
		}
	}
	run := newRun(filepath.Base(path), "golden step file")
	g := &goldenParser{run: run, path: path}
	for _, s := range secs {
		if err := g.section(s); err != nil {
			return nil, err
		}
	}
	if !g.ended {
		return nil, &FormatError{Path: path, Reason: "no end section: the file is cut short"}
	}
	goldenCommits(run.Steps)
	run.finish()
	run.Notes = append(run.Notes, "golden files hold no durations, and no counts of tokens: the token chart is empty")
	return run, nil
}

type goldenParser struct {
	run   *Run
	path  string
	ended bool
}

func (g *goldenParser) errf(s *section, off int, format string, args ...any) error {
	return &FormatError{Path: g.path, Line: s.line + 1 + off, Reason: fmt.Sprintf("section %q: ", s.name) + fmt.Sprintf(format, args...)}
}

// section adds one section to the run: its name is a path of steps and
// agents, "step 0/agent NAME CALL/step 1/messages".
func (g *goldenParser) section(s *section) error {
	parts := strings.Split(s.name, "/")
	steps := &g.run.Steps
	var step *Step
	var agent *Agent
	for i, p := range parts {
		last := i == len(parts)-1
		switch {
		case strings.HasPrefix(p, "step ") && !last:
			// "step N decided" is the record that completes a step paused
			// for approvals: a step of its own.
			num, decided := strings.CutSuffix(strings.TrimPrefix(p, "step "), " decided")
			n, err := strconv.Atoi(num)
			if err != nil {
				return g.errf(s, -1, "bad step number %q", p)
			}
			label := ""
			if decided {
				label = "decided"
			}
			step = nil
			if k := len(*steps); k > 0 && (*steps)[k-1].Number == n && (*steps)[k-1].Label == label {
				step = (*steps)[k-1]
			} else {
				step = &Step{Number: n, Label: label, Reply: -1}
				*steps = append(*steps, step)
			}
		case strings.HasPrefix(p, "agent ") && step != nil && !last:
			f := strings.Fields(strings.TrimPrefix(p, "agent "))
			if len(f) != 2 {
				return g.errf(s, -1, "bad agent %q", p)
			}
			agent = nil
			for _, a := range step.Agents {
				if a.Name == f[0] && a.CallID == f[1] {
					agent = a
				}
			}
			if agent == nil {
				agent = &Agent{Name: f[0], CallID: f[1]}
				step.Agents = append(step.Agents, agent)
			}
			steps, step = &agent.Steps, nil
		case last && p == "end":
			for _, l := range s.lines {
				if a, ok := strings.CutPrefix(l, "paused: "); ok {
					g.run.Notes = append(g.run.Notes, "the run is paused, "+a)
				}
				if e, ok := strings.CutPrefix(l, "error: "); ok {
					if agent != nil && len(parts) > 1 {
						agent.Error = e
					} else {
						g.run.Error = e
					}
				}
			}
			if len(parts) == 1 {
				g.ended = true
				g.run.Done = true
			}
		case last && step != nil:
			return g.stepSection(s, step, *steps, p)
		default:
			return g.errf(s, -1, "not a section of a golden step file")
		}
	}
	return nil
}

func (g *goldenParser) stepSection(s *section, step *Step, steps []*Step, kind string) error {
	// The previous step is the last one that sent a request, as for the
	// formatter: the record that completes a paused step sent none.
	var prev *Step
	for i := len(steps) - 2; i >= 0; i-- {
		if steps[i].Request != nil {
			prev = steps[i]
			break
		}
	}
	switch {
	case kind == "effects":
		for _, l := range s.lines {
			if l == "transcript committed" {
				step.committed = true
				continue
			}
			if m := reEffect.FindStringSubmatch(l); m != nil {
				step.Effects = append(step.Effects, Effect{ID: m[1], Phase: m[2], Site: m[3], Reason: m[4]})
			} else {
				step.Effects = append(step.Effects, Effect{Reason: l})
			}
		}
	case strings.HasPrefix(kind, "summary "):
		step.Summaries++
	case kind == "disabled":
		step.Disabled = append(step.Disabled, s.lines...)
	case kind == "reminded":
		step.Reminded = append(step.Reminded, s.lines...)
	case kind == "system":
		text := strings.Join(s.lines, "\n")
		if reAsIn.MatchString(text) && prev != nil {
			text = prev.System
		}
		step.System, step.systemID = text, text
	case kind == "tools":
		step.Tools = []string{}
		for _, l := range s.lines {
			if l == "(none)" || l == "" || strings.HasPrefix(l, " ") {
				continue
			}
			name, _, _ := strings.Cut(l, ":")
			step.Tools = append(step.Tools, name)
		}
	case kind == "messages":
		return g.messages(s, step, prev)
	case kind == "reply":
		m := Message{Role: "assistant"}
		rest := s.lines
		if len(rest) > 0 && strings.HasPrefix(rest[0], "finish: ") {
			step.Finish = strings.TrimPrefix(rest[0], "finish: ")
			rest = rest[1:]
		}
		if len(rest) > 0 && strings.HasPrefix(rest[0], "refusal: ") {
			step.Notes = append(step.Notes, "refused: "+strings.TrimPrefix(rest[0], "refusal: "))
			rest = rest[1:]
		}
		if err := g.body(s, 1+len(s.lines)-len(rest), rest, "", &m); err != nil {
			return err
		}
		step.Reply = g.run.add(m)
		for _, c := range m.Calls {
			step.Calls = append(step.Calls, ToolCall{ID: c.ID, Name: c.Name, Args: c.Args})
		}
	case kind == "results":
		return g.results(s, step)
	case kind == "output":
		if len(s.lines) > 0 {
			step.Notes = append(step.Notes, "typed answer asked for: "+s.lines[0])
		}
	case kind == "answer":
		step.Notes = append(step.Notes, "typed answer: "+strings.Join(s.lines, " "))
	case kind == "awaiting":
		for _, l := range s.lines {
			step.Notes = append(step.Notes, "awaiting approval: "+l)
		}
	case kind == "decisions":
		for _, l := range s.lines {
			if strings.HasPrefix(l, " ") {
				continue // a denial's reason, on its own lines
			}
			step.Notes = append(step.Notes, "decided: "+l)
		}
	case kind == "state":
		step.State = map[string]string{}
		for _, f := range fields(s.lines, "") {
			if f.label == "" && f.value == "(empty)" {
				continue
			}
			step.State[f.label] = f.value
		}
	default:
		return g.errf(s, -1, "unknown section %q", kind)
	}
	return nil
}

// messages reads a request's messages: "[0-k] (as in step N)" for those
// shared with the previous request, then "[i] role [call name] [(error)]"
// and the fields of each.
func (g *goldenParser) messages(s *section, step, prev *Step) error {
	step.Request = []int{}
	i := 0
	for i < len(s.lines) {
		l := s.lines[i]
		if l == "(none)" {
			i++
			continue
		}
		if m := reSame.FindStringSubmatch(l); m != nil {
			to, _ := strconv.Atoi(m[1])
			if m[2] != "" {
				to, _ = strconv.Atoi(m[2])
			}
			if prev == nil || prev.Request == nil || to >= len(prev.Request) {
				return g.errf(s, i, "%q refers to messages the previous step does not have", l)
			}
			step.Request = append(step.Request, prev.Request[:to+1]...)
			i++
			continue
		}
		m := reMessage.FindStringSubmatch(l)
		if m == nil {
			return g.errf(s, i, "want a message header \"[i] role\", got %q", trunc(l, 60))
		}
		msg := Message{Role: m[2]}
		rest := strings.TrimSpace(m[3])
		if strings.HasSuffix(rest, "(error)") {
			msg.IsError = true
			rest = strings.TrimSpace(strings.TrimSuffix(rest, "(error)"))
		}
		if f := strings.Fields(rest); msg.Role == "tool" && len(f) >= 1 {
			msg.CallID = f[0]
			if len(f) > 1 {
				msg.Name = f[1]
			}
		} else if len(f) == 1 {
			msg.Name = f[0]
		}
		j := i + 1
		for j < len(s.lines) && (strings.HasPrefix(s.lines[j], "  ") || s.lines[j] == "") {
			j++
		}
		if err := g.body(s, i+1, s.lines[i+1:j], "  ", &msg); err != nil {
			return err
		}
		step.Request = append(step.Request, g.run.add(msg))
		i = j
	}
	return nil
}

// results reads tool results: "id name args [(error)]" and a content field.
func (g *goldenParser) results(s *section, step *Step) error {
	i := 0
	for i < len(s.lines) {
		l := s.lines[i]
		isErr := strings.HasSuffix(l, " (error)")
		l = strings.TrimSuffix(l, " (error)")
		f := strings.SplitN(l, " ", 3)
		if len(f) < 2 {
			return g.errf(s, i, "want a result header \"call-id name arguments\", got %q", trunc(l, 60))
		}
		j := i + 1
		for j < len(s.lines) && (strings.HasPrefix(s.lines[j], "  ") || s.lines[j] == "") {
			j++
		}
		content := ""
		for _, fl := range fields(s.lines[i+1:j], "  ") {
			if fl.label == "content" {
				content = fl.value
			}
		}
		found := false
		for k := range step.Calls {
			if step.Calls[k].ID == f[0] {
				step.Calls[k].Result, step.Calls[k].IsError, found = content, isErr, true
			}
		}
		if !found {
			tc := ToolCall{ID: f[0], Name: f[1], Result: content, IsError: isErr}
			if len(f) == 3 {
				tc.Args = f[2]
			}
			step.Calls = append(step.Calls, tc)
		}
		i = j
	}
	return nil
}

// body reads the fields of a message: meta, reasoning, content, call.
func (g *goldenParser) body(s *section, off int, lines []string, indent string, m *Message) error {
	for _, f := range fields(lines, indent) {
		switch f.label {
		case "":
			if f.value != "" {
				return g.errf(s, off+f.line, "want a field \"label: value\", got %q", trunc(f.value, 60))
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
			p := strings.SplitN(f.value, " ", 3)
			c := Call{ID: p[0]}
			if len(p) > 1 {
				c.Name = p[1]
			}
			if len(p) > 2 {
				c.Args = p[2]
			}
			m.Calls = append(m.Calls, c)
		default:
			return g.errf(s, off+f.line, "unknown field %q", f.label)
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
		for len(vs) > 0 && vs[len(vs)-1] == "" {
			vs = vs[:len(vs)-1]
			j--
		}
		out = append(out, field{label: label, value: strings.Join(vs, "\n"), line: i})
		i = j - 1
	}
	return out
}

func trunc(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// goldenCommits sizes the commits a golden file marks ("transcript
// committed"): from the transcript the previous step left (its request,
// reply and results) to this step's request, which is exact for a commit
// made before the model call.
func goldenCommits(steps []*Step) {
	for i, s := range steps {
		if s.committed {
			c := Commit{After: len(s.Request)}
			if i > 0 {
				p := steps[i-1]
				c.Before = len(p.Request) + 1 + len(p.Calls)
			}
			s.Commits = append(s.Commits, c)
		}
		for _, a := range s.Agents {
			goldenCommits(a.Steps)
		}
	}
}
