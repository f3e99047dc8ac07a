package runtime

import (
	"slices"
	"strconv"
	"time"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/internal/steprec"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/session"
)

// stepRecorder gathers, for a run with a store, what the record of the step
// under way needs beyond its Step (see session.StepRecord): when it began,
// the rewrites of the transcript and how long the tool calls ran. It does
// nothing for a run without a store.
type stepRecorder struct {
	on      bool
	start   time.Time
	commits []session.CommitRecord
	calls   []time.Duration // by call of the reply, for the step under way
	record  *session.StepRecord
	// Reused from step to step: a store encodes the record during Save
	// and keeps none of it.
	buf      session.StepRecord
	callBuf  []session.CallRecord
	system   string // the last system prompt, and its id
	systemID string
	// paused is the record of the step as it paused (pause), which the
	// pending checkpoints keep and the record completing the step holds
	// (session.StepRecord.Paused): a viewer reads them from no other
	// checkpoint.
	paused *session.StepRecord

	tools     []llm.ToolSpec // the last request's tools, and their names
	toolNames []string
}

// begin starts the record of a step.
func (sr *stepRecorder) begin(r *Runner) {
	sr.on = r.cfg.Store != nil
	if !sr.on {
		return
	}
	sr.start = time.Now()
	sr.commits = sr.commits[:0]
	sr.calls = sr.calls[:0]
}

// commit notes a rewrite of the transcript from before to after messages.
func (sr *stepRecorder) commit(before, after int) {
	if sr.on {
		sr.commits = append(sr.commits, session.CommitRecord{Before: before, After: after})
	}
}

// noteCalls notes how long each call of a reply ran.
func (sr *stepRecorder) noteCalls(slots []callSlot) {
	if !sr.on {
		return
	}
	for _, s := range slots {
		sr.calls = append(sr.calls, s.dur)
	}
}

// end makes the record of rec for the checkpoint that ends the step.
func (sr *stepRecorder) end(rec *Step) {
	if !sr.on {
		return
	}
	sr.buf = session.StepRecord{}
	fillRecord(&sr.buf, rec, sr.calls, sr, true)
	sr.record = &sr.buf
	if len(sr.commits) > 0 {
		sr.record.Commits = sr.commits
	}
	sr.record.DurationNS = int64(time.Since(sr.start))
	completes(sr.record, rec)
	if sr.paused != nil && sr.paused.Step == rec.Number {
		sr.record.Paused, sr.paused = sr.paused, nil
	}
}

// pause makes the record of rec, a step that paused for approvals or
// answers: what end makes, with the calls awaiting and the state, which
// no checkpoint of the step's end will hold. A step that pauses again
// (a second question) keeps the earlier record in Paused.
func (sr *stepRecorder) pause(rec *Step) {
	if !sr.on {
		return
	}
	p := recordOf(rec, sr.calls)
	p.Commits = slices.Clone(sr.commits)
	p.DurationNS = int64(time.Since(sr.start))
	completes(p, rec)
	for _, a := range rec.Awaiting {
		p.Awaiting = append(p.Awaiting, steprec.Awaiting{CallID: a.CallID, Tool: a.Tool, Arguments: string(a.Arguments), Question: a.Question})
	}
	p.State = make(map[string]string, len(rec.State))
	for k, v := range rec.State {
		p.State[k] = steprec.StateValue(v)
	}
	if sr.paused != nil && sr.paused.Step == rec.Number {
		p.Paused = sr.paused
	}
	sr.paused = p
}

// completes sets on out, a checkpoint's record, the decisions that
// completed its paused step and the typed answer accepted, which a viewer
// finds nowhere else.
func completes(out *session.StepRecord, rec *Step) {
	if rec.Output != nil {
		out.Answer = steprec.OneLine(rec.Output)
	}
}

// take returns the record made by end, once.
func (sr *stepRecorder) take() *session.StepRecord {
	rec := sr.record
	sr.record = nil
	return rec
}

// recordOf returns the session record of rec; durs are the durations of
// its calls, by index, where known.
func recordOf(rec *Step, durs []time.Duration) *session.StepRecord {
	out := &session.StepRecord{}
	fillRecord(out, rec, durs, nil, true)
	return out
}

// fillRecord sets out to the record of rec. With sr, it reuses sr's
// buffers and the names and ids of the previous step's tools and system
// prompt when they did not change. Without checkpoint, it leaves out the
// fields only a checkpoint reads: System, Tools and Calls (ShownRecord).
func fillRecord(out *session.StepRecord, rec *Step, durs []time.Duration, sr *stepRecorder, checkpoint bool) {
	*out = session.StepRecord{
		Version:      session.RecordVersion,
		Step:         rec.Number,
		Effects:      rec.Effects,
		InputTokens:  rec.InputTokens,
		PrefixTokens: rec.PrefixTokens,
		Cache:        rec.Cache,
		BilledInput:  rec.BilledInput,
		Recovered:    rec.Recovered,
		Summaries:    len(rec.Summaries),
		Resumed:      rec.Resumed,
		Interrupted:  rec.Interrupted,
		Turn:         rec.Turn,
	}
	for _, d := range rec.Decisions {
		sd := steprec.Decision{CallID: d.CallID, Tool: d.Tool, Approved: d.Approved, Reason: d.Reason}
		for _, a := range d.Asked {
			sd.Asked = append(sd.Asked, steprec.Asked{Question: a.Question, Answer: a.Answer})
		}
		out.Decisions = append(out.Decisions, sd)
	}
	for _, m := range rec.Sent {
		out.Sent = append(out.Sent, m.Content)
	}
	if len(rec.Disabled) > 0 {
		out.Disabled = refStrings(rec.Disabled)
	}
	if len(rec.Reminded) > 0 {
		out.Reminded = refStrings(rec.Reminded)
	}
	if rec.sent && checkpoint {
		req := &rec.request // its Messages are not needed
		switch {
		case len(req.Tools) == 0:
		case sr != nil && sameToolSlice(sr.tools, req.Tools):
			out.Tools = sr.toolNames
		default:
			out.Tools = make([]string, len(req.Tools))
			for i, t := range req.Tools {
				out.Tools[i] = t.Name
			}
			if sr != nil {
				sr.tools, sr.toolNames = req.Tools, out.Tools
			}
		}
		switch {
		case req.System == "":
		case sr != nil && sr.system == req.System:
			out.System = sr.systemID
		default:
			out.System = systemID(req.System)
			if sr != nil {
				sr.system, sr.systemID = req.System, out.System
			}
		}
	}
	if reply := rec.Reply; reply != nil {
		u := reply.Usage
		out.Usage = session.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CachedTokens: u.CachedTokens,
			CacheWriteTokens: u.CacheWriteTokens, CacheWrite1hTokens: u.CacheWrite1hTokens}
		out.Finish = string(reply.FinishReason)
		if calls := reply.Message.ToolCalls; len(calls) > 0 && checkpoint {
			if sr != nil {
				sr.callBuf = slices.Grow(sr.callBuf[:0], len(calls))[:len(calls)]
				out.Calls = sr.callBuf
			} else {
				out.Calls = make([]session.CallRecord, len(calls))
			}
			for i, c := range calls {
				cr := session.CallRecord{ID: c.ID, Name: c.Name}
				if i < len(durs) {
					cr.DurationNS = int64(durs[i])
				}
				if err := rec.ToolErrors[c.ID]; err != nil {
					cr.Error = err.Error()
				}
				out.Calls[i] = cr
			}
		}
	}
	for _, a := range rec.Agents {
		ar := session.AgentRecord{CallID: a.CallID, Name: a.Name}
		if a.Err != nil {
			ar.Error = a.Err.Error()
		}
		for _, s := range a.Steps {
			if s == nil {
				continue
			}
			sub := &session.StepRecord{}
			fillRecord(sub, s, nil, nil, checkpoint)
			if s.Reply != nil {
				sub.Reply = s.Reply.Message.Content
			}
			if s.Committed {
				sub.Commits = []session.CommitRecord{{}} // a rewrite of unknown size
			}
			ar.Steps = append(ar.Steps, *sub)
		}
		out.Agents = append(out.Agents, ar)
	}
}

// systemID returns the FNV-1a hash of a system prompt, in hex.
func systemID(s string) string {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return strconv.FormatUint(h, 16)
}

// Record returns the record of the step: what a checkpoint keeps of it
// (see session.StepRecord; call durations are unknown here, 0) and what a
// golden step file shows of it (package snapshots): the request, the
// reply, the tool results, the summaries, the typed answer, the calls
// awaiting approval and the decisions on them, and the state, each value
// as JSON. The record shares the request's messages with the step:
// read-only.
func (s *Step) Record() *session.StepRecord {
	out := recordOf(s, nil)
	shown(out, s)
	return out
}

// ShownRecord sets *out to what a golden step file shows of the step
// (package snapshots): Record without the fields only a checkpoint reads
// (System, Tools, Calls, the durations). With requestOnly, it is the part
// that the golden text of a later step reads: the step's number and its
// request, nil if it sent none, without the request's messages (see
// RequestMessages), at a fraction of the cost. ShownRecord overwrites
// *out whole, so that a caller may fill the same record again and again;
// like Record's, the messages are shared with the step: read-only.
func (s *Step) ShownRecord(out *session.StepRecord, requestOnly bool) {
	if requestOnly {
		*out = session.StepRecord{Version: session.RecordVersion, Step: s.Number, Request: shownRequest(s)}
		return
	}
	fillRecord(out, s, nil, nil, false)
	shown(out, s)
}

// shownRequest returns the request of rec as a golden step file shows it,
// without its messages; nil if rec sent none.
func shownRequest(rec *Step) *steprec.Request {
	if !rec.sent {
		return nil
	}
	req := &rec.request
	r := &steprec.Request{System: req.System}
	if len(req.Tools) > 0 {
		r.Tools = make([]steprec.Tool, len(req.Tools))
		for i, t := range req.Tools {
			r.Tools[i] = steprec.Tool{Name: t.Name, Description: t.Description, Schema: steprec.SchemaText(t.Parameters)}
		}
	}
	if o := req.Output; o != nil {
		r.Output = &steprec.Output{Name: o.Name, Type: o.Type, Mode: string(o.Mode), Description: o.Description, Schema: steprec.SchemaText(o.Schema)}
	}
	return r
}

// shown sets the fields of out that a golden step file shows, from rec
// and its sub-agents' steps.
func shown(out *session.StepRecord, rec *Step) {
	out.Committed = rec.Committed
	if r := shownRequest(rec); r != nil {
		r.Messages = rec.msgs.slice()
		out.Request = r
	}
	if reply := rec.Reply; reply != nil {
		out.Response = &steprec.Response{Refusal: reply.Refusal, Message: reply.Message}
	}
	if len(rec.ToolResults) > 0 {
		out.Results = make([]steprec.Result, len(rec.ToolResults))
		for i, r := range rec.ToolResults {
			out.Results[i] = steprec.Result{CallID: r.CallID, Name: r.Name, Arguments: string(r.Arguments), Content: r.Content, IsError: r.IsError}
		}
	}
	for _, sum := range rec.Summaries {
		var sc steprec.Summary
		if req := sum.Request; req != nil {
			sc.System = req.System
			for _, m := range req.Messages {
				sc.Messages = append(sc.Messages, defs.Message{Role: m.Role, Content: m.Content})
			}
		}
		if sum.Err != nil {
			sc.Error = sum.Err.Error()
		}
		if sum.Reply != nil {
			sc.Text, sc.Answered = sum.Reply.Message.Content, true
		}
		out.SummaryCalls = append(out.SummaryCalls, sc)
	}
	if rec.Output != nil {
		out.Answer = steprec.OneLine(rec.Output)
	}
	for _, a := range rec.Awaiting {
		out.Awaiting = append(out.Awaiting, steprec.Awaiting{CallID: a.CallID, Tool: a.Tool, Arguments: string(a.Arguments)})
	}
	if rec.State != nil {
		out.State = make(map[string]string, len(rec.State))
		for k, v := range rec.State {
			out.State[k] = steprec.StateValue(v)
		}
	}
	for i, a := range rec.Agents {
		j := 0
		for _, s := range a.Steps {
			if s != nil {
				shown(&out.Agents[i].Steps[j], s)
				j++
			}
		}
	}
}
