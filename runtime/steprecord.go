package runtime

import (
	"hash/fnv"
	"strconv"
	"time"

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
	sr.record = recordOf(rec, sr.calls)
	if len(sr.commits) > 0 {
		sr.record.Commits = append([]session.CommitRecord(nil), sr.commits...)
	}
	sr.record.DurationNS = int64(time.Since(sr.start))
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
	out := &session.StepRecord{
		Version:      session.RecordVersion,
		Step:         rec.Number,
		Effects:      rec.Effects,
		InputTokens:  rec.InputTokens,
		PrefixTokens: rec.PrefixTokens,
		BilledInput:  rec.BilledInput,
		Recovered:    rec.Recovered,
		Summaries:    len(rec.Summaries),
		Resumed:      rec.Resumed,
		Interrupted:  rec.Interrupted,
	}
	if len(rec.Disabled) > 0 {
		out.Disabled = refStrings(rec.Disabled)
	}
	if len(rec.Reminded) > 0 {
		out.Reminded = refStrings(rec.Reminded)
	}
	if req := rec.Request; req != nil {
		if len(req.Tools) > 0 {
			out.Tools = make([]string, len(req.Tools))
			for i, t := range req.Tools {
				out.Tools[i] = t.Name
			}
		}
		if req.System != "" {
			h := fnv.New64a()
			h.Write([]byte(req.System))
			out.System = strconv.FormatUint(h.Sum64(), 16)
		}
	}
	if reply := rec.Reply; reply != nil {
		out.Usage = session.Usage{InputTokens: reply.Usage.InputTokens, OutputTokens: reply.Usage.OutputTokens, CachedTokens: reply.Usage.CachedTokens}
		out.Finish = string(reply.FinishReason)
		if calls := reply.Message.ToolCalls; len(calls) > 0 {
			out.Calls = make([]session.CallRecord, len(calls))
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
			sub := recordOf(s, nil)
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
	return out
}
