// Package showtext writes a run as `reprompt show` prints it: as text for a
// terminal, one screen per step or a chat log, with every control
// character of what the run stored escaped (Printable). The run is
// package viewer's model, read from a store, a golden file or a recording.
package showtext

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/reprompt/reprompt/cmd/reprompt/internal/viewer"
)

// Options configure Write.
type Options struct {
	// Width is the most characters of a message or result shown on its
	// line; zero means 160, a negative value no limit.
	Width int
	// Steps shows every step of a conversation in full, as for a run
	// that is not one, instead of a chat log.
	Steps bool
}

// Write writes run as text, one screen per step: a rule with the step's
// number and tokens, then the effects that ran and why, the diff of its
// request against the previous step's (messages added, removed and
// rewritten; tools offered and withdrawn; the system prompt), disables and
// reminders, commits, the reply and its tool calls with their results, and
// the state changes. Sub-agents follow their step, indented.
//
// A conversation (viewer.Run.Conversation) is written as a chat log instead,
// unless opts.Steps is set: turn by turn, the user's message, the messages
// sent while the run went on, the questions asked and answered, and the
// answer, with the turn's steps folded under it, one line each (the tools
// called, the effects that ran, the tokens).
func Write(w io.Writer, run *viewer.Run, opts Options) error {
	bw := bufio.NewWriter(w)
	t := &textWriter{w: bw, run: run, width: opts.Width}
	if t.width == 0 {
		t.width = 160
	}
	chat := !opts.Steps && run.Conversation()
	head := fmt.Sprintf("%s (%s): ", run.Title, run.Source)
	if chat {
		head += fmt.Sprintf("%d turns, ", len(run.Turns()))
	}
	head += fmt.Sprintf("%d steps", len(run.Steps))
	if run.Done {
		head += ", done"
	}
	t.line("", "%s", head)
	if run.Error != "" {
		t.line("", "error: %s", run.Error)
	}
	for _, n := range run.Notes {
		t.line("", "note: %s", n)
	}
	if chat {
		for _, turn := range run.Turns() {
			t.turn(turn)
		}
		return bw.Flush()
	}
	for _, s := range run.Steps {
		t.step("", s)
	}
	return bw.Flush()
}

// turn writes one turn of a conversation as a chat log.
func (t *textWriter) turn(turn viewer.Turn) {
	t.line("", "")
	msg := turn.Message
	if msg == "" {
		msg = "(not recorded)"
	}
	t.line("", "user: %s", t.short(msg))
	for i, s := range turn.Steps {
		for _, m := range s.Steering() {
			t.line("", "user (sent while the run went on, joined at step %d): %s", s.Number, t.short(m))
		}
		for _, a := range s.Asks {
			t.ask(a)
		}
		if i == len(turn.Steps)-1 {
			t.answer(s)
		}
	}
	for _, s := range turn.Steps {
		t.line("    ", "%s", t.short(t.fold(s)))
	}
}

// ask writes a question asked, or an approval waited for, and its answer.
func (t *textWriter) ask(a viewer.Ask) {
	call := a.CallID + " " + a.Tool
	if a.Question != "" {
		t.line("", "assistant asks (call %s): %s", call, t.short(a.Question))
	} else if a.Decision == "awaiting" {
		t.line("", "assistant awaits approval of call %s", call)
	}
	switch a.Decision {
	case "answered":
		if a.Answer == "" {
			t.line("", "user answers (the answer is not recorded)")
		} else {
			t.line("", "user answers: %s", t.short(a.Answer))
		}
	case "approved":
		t.line("", "user approves call %s", call)
	case "denied":
		t.line("", "user denies call %s: %s", call, t.short(a.Reason))
	case "awaiting":
		if a.Question != "" {
			t.line("", "(awaiting the answer)")
		}
	}
}

// answer writes the reply that ends a turn, or what the turn is at.
func (t *textWriter) answer(s *viewer.Step) {
	switch {
	case s.Damage != "" && s.Reply < 0:
		t.line("", "assistant: (no answer: %s)", t.short(s.Damage))
	case s.Reply < 0:
		t.line("", "assistant: (no answer)")
	case len(s.Calls) > 0 && len(s.Asks) == 0:
		m := t.run.Messages[s.Reply]
		if m.Content != "" {
			t.line("", "assistant: %s", t.short(m.Content))
		}
		t.line("", "assistant: (no answer yet: the last step called %s)", callNames(s.Calls))
	case len(s.Calls) == 0:
		t.line("", "assistant: %s", t.short(t.run.Messages[s.Reply].Content))
	}
}

// fold is the one line of a step under its turn's answer.
func (t *textWriter) fold(s *viewer.Step) string {
	parts := []string{fmt.Sprintf("step %d", s.Number)}
	if s.Label != "" {
		parts[0] += " (" + s.Label + ")"
	}
	if n := len(s.Steering()); n > 0 {
		parts = append(parts, fmt.Sprintf("+%d sent", n))
	}
	switch {
	case len(s.Calls) > 0:
		calls := make([]string, len(s.Calls))
		for i, c := range s.Calls {
			calls[i] = c.Name + " " + c.Args
			if c.IsError {
				calls[i] += " (error)"
			}
		}
		parts = append(parts, "called "+strings.Join(calls, ", "))
	case s.Reply >= 0:
		parts = append(parts, "answer")
	}
	for _, a := range s.Agents {
		parts = append(parts, fmt.Sprintf("sub-agent %s: %d steps", a.Name, len(a.Steps)))
	}
	if len(s.Effects) > 0 {
		effs := make([]string, len(s.Effects))
		for i, e := range s.Effects {
			effs[i] = e.ID + " (" + e.Reason + ")"
		}
		parts = append(parts, "effects "+strings.Join(effs, ", "))
	}
	if len(s.Changes) > 0 {
		keys := make([]string, len(s.Changes))
		for i, c := range s.Changes {
			keys[i] = c.Key
		}
		parts = append(parts, "state "+strings.Join(keys, ", "))
	}
	if s.Compaction {
		parts = append(parts, "compaction")
	} else if len(s.Commits) > 0 {
		parts = append(parts, "commit")
	}
	if s.InputTokens > 0 {
		parts = append(parts, fmt.Sprintf("input %d tokens (cached %d)", s.InputTokens, s.PrefixTokens))
	}
	if s.CacheMiss != "" {
		parts = append(parts, "cache miss")
	}
	if s.OutputTokens > 0 {
		parts = append(parts, fmt.Sprintf("output %d", s.OutputTokens))
	}
	if s.DurationMS > 0 {
		parts = append(parts, fmt.Sprintf("%.1f ms", s.DurationMS))
	}
	if m := s.Mark(); m != "" {
		parts = append(parts, m)
	}
	if s.Damage != "" {
		parts = append(parts, "! "+s.Damage)
	}
	return strings.Join(parts, " · ")
}

func callNames(calls []viewer.ToolCall) string {
	names := make([]string, len(calls))
	for i, c := range calls {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

type textWriter struct {
	w     *bufio.Writer
	run   *viewer.Run
	width int
}

// line writes one line, its control characters escaped (Printable):
// what a run stored reaches the terminal as text, never as a sequence
// the terminal obeys.
func (t *textWriter) line(indent, format string, args ...any) {
	t.w.WriteString(indent)
	t.w.WriteString(Printable(fmt.Sprintf(format, args...)))
	t.w.WriteString("\n")
}

// short cuts s to the width, in characters: never inside one.
func (t *textWriter) short(s string) string {
	return cut(s, t.width)
}

func (t *textWriter) step(indent string, s *viewer.Step) {
	head := fmt.Sprintf("step %d", s.Number)
	if s.Label != "" {
		head += " (" + s.Label + ")"
	}
	if m := s.Mark(); m != "" {
		head += " [" + m + "]"
	}
	if s.InputTokens > 0 {
		est := ""
		if s.Estimated {
			est = ", provider's count"
		}
		head += fmt.Sprintf(" · input %d tokens (cached prefix %d, new %d%s)", s.InputTokens, s.PrefixTokens, s.InputTokens-s.PrefixTokens, est)
	}
	if s.OutputTokens > 0 {
		head += fmt.Sprintf(" · output %d", s.OutputTokens)
	}
	if s.DurationMS > 0 {
		head += fmt.Sprintf(" · %.1f ms", s.DurationMS)
	}
	t.line(indent, "── %s %s", head, strings.Repeat("─", max(0, 72-len(head))))
	if s.Damage != "" {
		t.line(indent, "! %s", s.Damage)
	}
	if s.CacheMiss != "" {
		t.line(indent, "cache miss: %s", s.CacheMiss)
	}
	for _, e := range s.Effects {
		t.line(indent, "effect %s %s %s: %s", e.ID, e.Phase, e.Site, e.Reason)
	}
	if s.Request != nil {
		d := s.Diff
		t.line(indent, "request: %d messages; %d as before, %d added, %d removed, %d rewritten", len(s.Request), d.Shared, len(d.Added), len(d.Removed), len(d.Rewritten))
		for _, i := range d.Added {
			t.line(indent, "  + %s", t.message(i))
		}
		for _, i := range d.Removed {
			t.line(indent, "  - %s", t.message(i))
		}
		for _, p := range d.Rewritten {
			t.line(indent, "  ~ %s", t.message(p[0]))
			t.line(indent, "    → %s", t.message(p[1]))
		}
	}
	if s.SystemChanged {
		t.line(indent, "system prompt changed")
	}
	if len(s.ToolsOn) > 0 || len(s.ToolsOff) > 0 {
		t.line(indent, "tools: offered %s; withdrawn %s", list(s.ToolsOn), list(s.ToolsOff))
	}
	if len(s.Disabled) > 0 {
		t.line(indent, "disabled: %s", strings.Join(s.Disabled, ", "))
	}
	if len(s.Reminded) > 0 {
		t.line(indent, "reminded: %s", strings.Join(s.Reminded, ", "))
	}
	for _, c := range s.Commits {
		kind := "commit"
		if c.After < c.Before {
			kind = "compaction"
		}
		t.line(indent, "%s: %d → %d messages", kind, c.Before, c.After)
	}
	if s.Resumed {
		t.line(indent, "resumed: the run stopped after the model's reply and a resume completed the step; interrupted calls: %s", list(s.Interrupted))
	}
	if s.Recovered {
		t.line(indent, "recovered: the provider found the request too long; sent again after compaction")
	}
	for _, n := range s.Notes {
		t.line(indent, "%s", t.short(n))
	}
	if s.Reply >= 0 {
		m := t.run.Messages[s.Reply]
		fin := ""
		if s.Finish != "" {
			fin = " (" + s.Finish + ")"
		}
		if m.Content != "" || len(s.Calls) == 0 {
			t.line(indent, "reply%s: %s", fin, t.short(m.Content))
		} else {
			t.line(indent, "reply%s:", fin)
		}
	}
	for _, c := range s.Calls {
		dur := ""
		if c.DurationMS > 0 {
			dur = fmt.Sprintf(" (%.1f ms)", c.DurationMS)
		}
		res := t.short(c.Result)
		if c.IsError && !strings.HasPrefix(res, "error") {
			res = "error: " + res
		}
		t.line(indent, "  call %s %s %s%s → %s", c.ID, c.Name, t.short(c.Args), dur, res)
		if c.Error != "" {
			t.line(indent, "    Go error: %s", t.short(c.Error))
		}
	}
	for _, a := range s.Agents {
		errs := ""
		if a.Error != "" {
			errs = ", failed: " + a.Error
		}
		t.line(indent, "  sub-agent %s (call %s): %d steps%s", a.Name, a.CallID, len(a.Steps), errs)
		for _, sub := range a.Steps {
			t.step(indent+"    ", sub)
		}
	}
	for _, c := range s.Changes {
		switch {
		case c.Before == "":
			t.line(indent, "state %s = %s", c.Key, t.short(c.After))
		case c.After == "":
			t.line(indent, "state %s removed (was %s)", c.Key, t.short(c.Before))
		default:
			t.line(indent, "state %s: %s → %s", c.Key, t.short(c.Before), t.short(c.After))
		}
	}
}

// message is one line for message i of the pool.
func (t *textWriter) message(i int) string {
	m := t.run.Messages[i]
	head := m.Role
	if m.CallID != "" {
		head += " " + m.CallID
	}
	if m.Name != "" {
		head += " " + m.Name
	}
	if m.IsError {
		head += " (error)"
	}
	body := m.Content
	for _, c := range m.Calls {
		body += fmt.Sprintf(" [call %s %s %s]", c.ID, c.Name, c.Args)
	}
	return head + ": " + t.short(strings.TrimSpace(body))
}

func list(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
