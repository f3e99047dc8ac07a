package viewer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/internal/steprec"
	"github.com/reprompt/reprompt/session"
)

// DamageError reports checkpoints of a session that could not be read.
// The Run returned with it holds every step that could.
type DamageError struct {
	ID string
	// Places say, one each, which checkpoint is damaged and how.
	Places []string
}

func (e *DamageError) Error() string {
	return fmt.Sprintf("session %q is damaged: %s", e.ID, strings.Join(e.Places, "; "))
}

// FromStore reads session id from st: the checkpoint that ends each step
// (session.Store.AtStep, all in one pass through session.AtSteps) and, when the run stopped in the middle of a step,
// the latest one. An unknown session is the store's *session.NotFoundError.
// A checkpoint that cannot be read (*session.CorruptError, a later version)
// leaves its step marked damaged: the Run then comes back with a
// *DamageError naming every damaged checkpoint.
func FromStore(ctx context.Context, st session.Store, id string) (*Run, error) {
	info, err := st.Stat(ctx, id)
	if err != nil {
		return nil, err
	}
	run := newRun(id, "session store")
	run.Done = info.Done
	dmg := &DamageError{ID: id}
	failed := map[int]error{} // by AtStep's step
	// The checkpoints of steps 0 to info.Step, in one pass when the store
	// can (session.StepReader); a step the pass did not reach (it ended on
	// an error) is read by itself.
	next, stop := iter.Pull2(session.AtSteps(ctx, st, id, 0, info.Step))
	defer stop()
	load := func(step int) *session.Checkpoint {
		cp, err, ok := next()
		if !ok {
			cp, err = st.AtStep(ctx, id, step)
		}
		switch {
		case err == nil:
			return cp
		case errors.Is(err, session.ErrNotFound):
			return nil
		case ctx.Err() != nil:
			return nil
		}
		failed[step] = err
		dmg.Places = append(dmg.Places, checkpointName(step)+": "+err.Error())
		return nil
	}
	start := load(0)
	if start != nil && start.Pending == nil && info.Step == 0 {
		start = nil // only the start: no step ran
	}
	for n := range info.Step {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		end := load(n + 1)
		s := &Step{Number: n, Reply: -1}
		if end == nil || end.Pending != nil {
			// Named as the notes name it (checkpointName).
			s.Damage = fmt.Sprintf("no checkpoint ends step %d", n)
			if err := failed[n+1]; err != nil {
				s.Damage = checkpointName(n+1) + " could not be read: " + err.Error()
			}
		} else {
			run.stepFrom(s, start, end)
			if rec := end.Record; rec != nil && rec.Step == n && rec.Paused != nil {
				// The step paused, then a decision or an answer completed
				// it: the pause first, with the request and the reply; the
				// completion sent nothing.
				paused := run.pausedSteps(s, rec.Paused)
				run.Steps = append(run.Steps, paused...)
				s.Request, s.Reply = nil, -1
				// A call that asked a question was answered, not approved.
				for i, a := range s.Asks {
					for _, q := range paused[len(paused)-1].Asks {
						if q.CallID == a.CallID && q.Question != "" && a.Decision == "approved" {
							s.Asks[i].Question, s.Asks[i].Decision = q.Question, "answered"
						}
					}
				}
			}
		}
		run.Steps = append(run.Steps, s)
		start = end
	}
	if !info.Done {
		latest, err := st.Latest(ctx, id)
		switch {
		case err != nil:
			dmg.Places = append(dmg.Places, fmt.Sprintf("latest checkpoint (seq %d): %v", info.Seq, err))
		case latest.Pending != nil:
			s := &Step{Number: latest.Step, Reply: -1, Stopped: "interrupted", Damage: "interrupted: the run stopped after the model's reply, before its tool calls all completed"}
			run.pendingStep(s, latest)
			run.Steps = append(run.Steps, s)
		}
	}
	run.finish()
	if len(dmg.Places) > 0 {
		run.Notes = append(run.Notes, dmg.Places...)
		return run, dmg
	}
	if len(run.Steps) > 0 && !recorded(run.Steps) {
		run.Notes = append(run.Notes, "the checkpoints hold no step records (saved by an older runtime): effects, disables and tool durations are unknown; tokens are the provider's usage")
	}
	return run, nil
}

// checkpointName names the checkpoint that AtStep(step) reads, as the
// notes and the steps' damage say it: by the step it ends, the number the
// step list shows.
func checkpointName(step int) string {
	if step == 0 {
		return "the checkpoint that starts the run"
	}
	return fmt.Sprintf("the checkpoint that ends step %d", step-1)
}

func recorded(steps []*Step) bool {
	for _, s := range steps {
		if len(s.Effects) > 0 || !s.Estimated {
			return true
		}
	}
	return false
}

// stepFrom fills s from the checkpoints before (start, nil if unknown) and
// after it (end).
func (run *Run) stepFrom(s *Step, start, end *session.Checkpoint) {
	tr := end.Transcript
	idx := run.memo.next(run, tr)
	ri := -1
	for i := len(tr) - 1; i >= 0; i-- {
		if tr[i].Role == defs.RoleAssistant {
			ri = i
			break
		}
	}
	reqEnd := len(tr)
	if ri >= 0 {
		reqEnd = ri
		s.Reply = idx[ri]
		results := map[string]int{}
		for j, m := range tr[ri+1:] {
			if m.Role == defs.RoleTool {
				results[m.ToolCallID] = ri + 1 + j
			}
		}
		for _, c := range tr[ri].ToolCalls {
			tc := ToolCall{ID: c.ID, Name: c.Name, Args: string(c.Arguments)}
			if j, ok := results[c.ID]; ok {
				tc.Result, tc.IsError = tr[j].Content, tr[j].IsError
				tc.resultMsg = 1 + idx[j]
			}
			s.Calls = append(s.Calls, tc)
		}
	}
	// The request shares the memo's array, which later steps extend but
	// never change: no copy of a long history at every step.
	s.Request = idx[:reqEnd:reqEnd]
	if st, err := stateOf(end.State); err == nil {
		s.State = st
	} else {
		s.Damage = err.Error()
	}
	if rec := end.Record; rec != nil && rec.Step == s.Number {
		run.applyRecord(s, rec)
		return
	}
	// No record: what the checkpoints tell.
	s.Estimated = true
	var before session.Stats
	if start != nil {
		if start.Pending == nil { // a checkpoint saved in the middle of step 0 counts its usage already
			before = start.Stats
		}
		if end.Generation > start.Generation {
			s.Commits = append(s.Commits, Commit{Before: len(start.Transcript), After: reqEnd})
		}
	}
	s.InputTokens = end.Stats.InputTokens - before.InputTokens
	s.PrefixTokens = end.Stats.CachedTokens - before.CachedTokens
	s.OutputTokens = end.Stats.OutputTokens - before.OutputTokens
}

// transcriptMemo remembers the pool index of each message of the
// transcript of the previous step read from a store, so that the messages
// the next transcript shares with it are not hashed again: checkpoints
// read in one pass (session.StepReader) share their messages, and
// comparing shared strings costs no more than comparing pointers.
type transcriptMemo struct {
	tr  []defs.Message
	idx []int // pool index of tr[i]
}

// next makes tr the transcript remembered and returns the pool index of
// each of its messages, added if new, as Run.add returns it. A transcript
// that extends the previous one gets the previous indices' array,
// extended: the slices returned are never changed, only appended to
// beyond their length, so a step's request may share it.
func (m *transcriptMemo) next(run *Run, tr []defs.Message) []int {
	shared := 0
	if len(tr) > 0 && len(m.tr) > 0 && &tr[0] == &m.tr[0] {
		// One array of messages (a lineage read in one pass), which the
		// store only appends to.
		shared = min(len(tr), len(m.tr))
	}
	for shared < len(m.tr) && shared < len(tr) && tr[shared].Identical(m.tr[shared]) {
		shared++
	}
	idx := m.idx[:shared:shared]
	if shared == len(m.idx) {
		idx = m.idx // extend it in place: nothing refers past its length
	} else {
		idx = append(make([]int, 0, len(tr)), idx...)
	}
	for _, msg := range tr[shared:] {
		idx = append(idx, run.add(fromDefs(msg)))
	}
	m.tr, m.idx = tr, idx
	return idx
}

// pausedSteps returns the steps of the pauses of s, a step whose record
// holds paused (steprec.Step.Paused), oldest first: each with the
// request, the reply and the calls of s, but for the results of the calls
// that awaited a decision or an answer, which came later.
func (run *Run) pausedSteps(s *Step, paused *steprec.Step) []*Step {
	var chain []*steprec.Step
	for p := paused; p != nil; p = p.Paused {
		chain = append([]*steprec.Step{p}, chain...)
	}
	out := make([]*Step, len(chain))
	for i, rec := range chain {
		ps := &Step{Number: s.Number, Request: s.Request, Reply: s.Reply, Turn: s.Turn, Sent: s.Sent}
		for _, c := range s.Calls {
			if slices.ContainsFunc(rec.Awaiting, func(a steprec.Awaiting) bool { return a.CallID == c.ID }) {
				c.Result, c.IsError, c.resultMsg = "", false, 0
			}
			ps.Calls = append(ps.Calls, c)
		}
		run.applyRecord(ps, rec)
		ps.Estimated = false
		out[i] = ps
	}
	return out
}

// turnKey is runtime.TurnKey, the key of session.Checkpoint.Extra that
// holds the turn a conversation is on: {"number": n, "message": "..."}.
const turnKey = "runtime.turn"

// pendingStep fills s from a checkpoint saved in the middle of its step.
func (run *Run) pendingStep(s *Step, cp *session.Checkpoint) {
	s.Request = make([]int, len(cp.Transcript))
	for i, m := range cp.Transcript {
		s.Request[i] = run.add(fromDefs(m))
	}
	p := cp.Pending
	s.Reply = run.add(fromDefs(p.Reply))
	for _, c := range p.Reply.ToolCalls {
		tc := ToolCall{ID: c.ID, Name: c.Name, Args: string(c.Arguments), Result: "(no result: the call had not completed)"}
		for _, r := range p.Results {
			if r.CallID == c.ID {
				tc.Result, tc.IsError = r.Content, r.IsError
			}
		}
		s.Calls = append(s.Calls, tc)
	}
	if st, err := stateOf(cp.State); err == nil {
		s.State = st
	}
	s.Estimated = true
	if rec := cp.Record; rec != nil && rec.Step == s.Number && len(rec.Awaiting) > 0 {
		// Paused for approvals or answers: the record of the pause, and
		// those of the earlier pauses of the step before it.
		if rec.Paused != nil {
			run.Steps = append(run.Steps, run.pausedSteps(s, rec.Paused)...)
		}
		run.applyRecord(s, rec)
		s.Estimated, s.Damage, s.Stopped = false, "", "paused"
		for i, c := range s.Calls {
			if slices.ContainsFunc(rec.Awaiting, func(a steprec.Awaiting) bool { return a.CallID == c.ID }) {
				s.Calls[i].Result = "" // awaited, not interrupted
			}
		}
	} else if rec != nil && rec.Step == s.Number {
		s.Turn, s.Sent = rec.Turn, rec.Sent
	} else if n := len(run.Steps); n > 0 {
		s.Turn = run.Steps[n-1].Turn
	}
	var t struct {
		Number  int    `json:"number"`
		Message string `json:"message"`
	}
	if raw, ok := cp.Extra[turnKey]; ok && json.Unmarshal(raw, &t) == nil && t.Number > s.Turn {
		// The first step of a turn, paused: its record is not saved yet.
		s.Turn, s.Sent = t.Number, []string{t.Message}
	}
	s.Asks = asksOf(p)
}

// asksOf returns the questions and approvals of a paused step.
func asksOf(p *session.Pending) []Ask {
	var out []Ask
	for _, a := range p.Approvals {
		tool := ""
		for _, c := range p.Reply.ToolCalls {
			if c.ID == a.CallID {
				tool = c.Name
			}
		}
		decision := string(a.Decision)
		if a.Decision == session.Awaiting {
			decision = "awaiting"
		}
		if len(a.Asks) == 0 {
			ask := Ask{CallID: a.CallID, Tool: tool, Decision: decision}
			if a.Decision == session.Denied {
				for _, r := range p.Results {
					if r.CallID == a.CallID {
						ask.Reason = r.Content
					}
				}
			}
			out = append(out, ask)
			continue
		}
		for _, q := range a.Asks {
			ask := Ask{CallID: a.CallID, Tool: tool, Question: q.Question, Decision: "awaiting"}
			if q.Answer != nil {
				ask.Answer, ask.Decision = compactJSON(q.Answer), "answered"
			}
			out = append(out, ask)
		}
	}
	return out
}

func ms(ns int64) float64 { return float64(time.Duration(ns).Microseconds()) / 1000 }
