package viewer

import (
	"strings"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/internal/steprec"
)

// applyRecord fills s from the record of its step, as a checkpoint holds
// it (the measures: tokens, durations, commits) or as a golden file does
// (what was sent and answered, and the state); s.Record gets the rest.
func (run *Run) applyRecord(s *Step, rec *steprec.Step) {
	s.Record = pageRecord(rec)
	s.Turn, s.Sent = rec.Turn, rec.Sent
	s.InputTokens, s.PrefixTokens, s.OutputTokens = rec.InputTokens, rec.PrefixTokens, rec.Usage.OutputTokens
	s.Disabled, s.Reminded, s.Tools = rec.Disabled, rec.Reminded, rec.Tools
	s.CacheMiss = rec.Cache
	if s.Tools == nil && len(rec.Decisions) == 0 && rec.Paused == nil && !rec.Resumed {
		s.Tools = []string{} // none offered; a completion offers nothing, withdraws nothing
	}
	s.Finish, s.Recovered, s.Summaries, s.Resumed, s.Interrupted = rec.Finish, rec.Recovered, rec.Summaries, rec.Resumed, rec.Interrupted
	s.DurationMS = ms(rec.DurationNS)
	s.committed = rec.Committed
	for _, e := range rec.Effects {
		s.Effects = append(s.Effects, Effect{ID: e.ID, Phase: e.Phase.String(), Site: e.Site, Reason: e.Reason.String()})
	}
	for _, c := range rec.Commits {
		s.Commits = append(s.Commits, Commit(c))
	}
	s.systemID = rec.System
	if req := rec.Request; req != nil {
		s.System, s.systemID = req.System, "\x00"+req.System
		s.Request = make([]int, len(req.Messages))
		for i, m := range req.Messages {
			s.Request[i] = run.add(fromDefs(m))
		}
		if o := req.Output; o != nil {
			s.Notes = append(s.Notes, "typed answer asked for: "+o.Name+" ("+o.Type+", "+o.Mode+"): "+o.Description)
		}
	}
	if r := rec.Response; r != nil {
		s.Reply = run.add(fromDefs(r.Message))
		for _, c := range r.Message.ToolCalls {
			s.Calls = append(s.Calls, ToolCall{ID: c.ID, Name: c.Name, Args: string(c.Arguments)})
		}
		if r.Refusal != "" {
			s.Notes = append(s.Notes, "refused: "+r.Refusal)
		}
	}
	for _, r := range rec.Results {
		found := false
		for k := range s.Calls {
			if s.Calls[k].ID == r.CallID {
				s.Calls[k].Result, s.Calls[k].IsError, found = r.Content, r.IsError, true
			}
		}
		if !found {
			s.Calls = append(s.Calls, ToolCall{ID: r.CallID, Name: r.Name, Args: r.Arguments, Result: r.Content, IsError: r.IsError})
		}
	}
	for i := range s.Calls {
		for _, c := range rec.Calls {
			if c.ID != s.Calls[i].ID {
				continue
			}
			s.Calls[i].DurationMS = ms(c.DurationNS)
			// The Go error, unless the result the model got says it
			// already (the runtime's "error: " + err.Error()): shown once.
			if !strings.Contains(s.Calls[i].Result, c.Error) {
				s.Calls[i].Error = c.Error
			}
		}
	}
	if rec.Answer != "" {
		s.Notes = append(s.Notes, "typed answer: "+rec.Answer)
	}
	for _, a := range rec.Awaiting {
		if a.Question != "" {
			s.Notes = append(s.Notes, "awaiting an answer: "+a.CallID+" "+a.Tool+" "+a.Arguments)
		} else {
			s.Notes = append(s.Notes, "awaiting approval: "+a.CallID+" "+a.Tool+" "+a.Arguments)
		}
		s.Asks = append(s.Asks, Ask{CallID: a.CallID, Tool: a.Tool, Question: a.Question, Decision: "awaiting"})
	}
	if len(rec.Decisions) > 0 {
		s.Label = "decided"
	}
	for _, d := range rec.Decisions {
		if d.Approved && len(d.Asked) > 0 { // a call that asked the user: its questions and answers
			for _, q := range d.Asked {
				s.Asks = append(s.Asks, Ask{CallID: d.CallID, Tool: d.Tool, Question: q.Question, Decision: "answered", Answer: string(q.Answer)})
				s.Notes = append(s.Notes, "answered: "+d.CallID+" "+d.Tool+" "+q.Question+" → "+string(q.Answer))
			}
			continue
		}
		n := "decided: " + d.CallID + " " + d.Tool + " approved"
		if !d.Approved {
			n = "decided: " + d.CallID + " " + d.Tool + " denied: " + d.Reason
		}
		a := Ask{CallID: d.CallID, Tool: d.Tool, Decision: "approved"}
		if !d.Approved {
			a.Decision, a.Reason = "denied", d.Reason
		}
		s.Asks = append(s.Asks, a)
		s.Notes = append(s.Notes, n)
	}
	if rec.State != nil {
		s.State = rec.State
	}
	for _, a := range rec.Agents {
		ag := &Agent{Name: a.Name, CallID: a.CallID, Error: a.Error}
		for _, sr := range a.Steps {
			sub := &Step{Number: sr.Step, Reply: -1}
			if sr.Response == nil && (sr.Reply != "" || len(sr.Calls) > 0) {
				// A checkpoint's record of a sub-agent's step: the reply's
				// text and calls, no transcript.
				m := Message{Role: string(defs.RoleAssistant), Content: sr.Reply}
				for _, c := range sr.Calls {
					m.Calls = append(m.Calls, Call{ID: c.ID, Name: c.Name})
					sub.Calls = append(sub.Calls, ToolCall{ID: c.ID, Name: c.Name})
				}
				sub.Reply = run.add(m)
			}
			run.applyRecord(sub, &sr)
			ag.Steps = append(ag.Steps, sub)
		}
		s.Agents = append(s.Agents, ag)
	}
}

// pageRecord returns rec without the parts that Step shows in its own
// form: what is left (and any field added to the record) reaches the page
// as the record has it, in the step's "record".
func pageRecord(rec *steprec.Step) *steprec.Step {
	r := *rec
	r.Effects, r.Disabled, r.Reminded, r.Tools, r.Calls, r.Commits, r.Agents = nil, nil, nil, nil, nil, nil, nil
	r.Request, r.Response, r.Results, r.SummaryCalls, r.Awaiting, r.Decisions, r.State = nil, nil, nil, nil, nil, nil, nil
	r.Reply, r.Interrupted, r.System = "", nil, ""
	r.Turn, r.Sent, r.Paused, r.Answer = 0, nil, nil, ""
	return &r
}
