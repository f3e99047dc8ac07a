package runtime

import (
	"slices"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
)

// AgentRun is the record of a sub-agent that a tool call ran (a tool
// declared with DefAgent), kept in the parent's Step.Agents.
type AgentRun struct {
	// CallID is the id of the parent's tool call that ran the sub-agent;
	// Name is the sub-agent's name.
	CallID string
	Name   string
	// Steps are the records of the sub-agent's steps, as its own run
	// returned them (its own sub-agents and summaries included). When the
	// sub-agent failed, the last one is the failing step's, as far as it
	// went.
	Steps []*Step
	// Err is the error the sub-agent's run ended with; nil if it
	// completed. The parent's model receives it as an error result.
	Err error
}

// Summary is the record of one completion that an effect asked for through
// effects.Step.Model (compaction's summaries), answered by
// Config.Summarizer or the run's model.
type Summary struct {
	// Request is what was sent; its Purpose is llm.PurposeSummary.
	Request *llm.Request
	// Reply is the answer; nil when the call failed.
	Reply *llm.Reply
	// Err is the error of a failed call; the effect that asked decides
	// what to do with it (compaction falls back on a summary made by rule).
	Err error
}

// recordAgent keeps the record of a sub-agent run by the tool call callID
// until the step takes it. Sub-agents of parallel calls record
// concurrently.
func (r *Runner) recordAgent(callID, name string, steps []*Step, err error) {
	r.recMu.Lock()
	r.agentRuns = append(r.agentRuns, &AgentRun{CallID: callID, Name: name, Steps: steps, Err: err})
	r.recMu.Unlock()
}

// takeAgentRuns returns the sub-agent runs of calls, in call order, and
// forgets every run recorded so far (a run of a call that timed out and
// finished later belongs to no step).
func (r *Runner) takeAgentRuns(calls []defs.ToolCall) []*AgentRun {
	r.recMu.Lock()
	runs := r.agentRuns
	r.agentRuns = nil
	r.recMu.Unlock()
	if len(runs) == 0 {
		return nil
	}
	var out []*AgentRun
	for _, c := range calls {
		for _, a := range runs {
			if a.CallID == c.ID {
				out = append(out, a)
			}
		}
	}
	return slices.Clip(out)
}

// recordSummary keeps the record of a summary request until the step
// takes it.
func (r *Runner) recordSummary(req *llm.Request, reply *llm.Reply, err error) {
	r.recMu.Lock()
	r.summaries = append(r.summaries, &Summary{Request: req, Reply: reply, Err: err})
	r.recMu.Unlock()
}

// attachSummaries moves the summaries recorded since the last step into s
// (dropped when s is nil: the step left no record).
func (r *Runner) attachSummaries(s *Step) {
	r.recMu.Lock()
	sums := r.summaries
	r.summaries = nil
	r.recMu.Unlock()
	if s != nil {
		s.Summaries = append(s.Summaries, sums...)
	}
}
