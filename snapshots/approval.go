package snapshots

import (
	"context"

	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
)

// Decide answers the tool calls a run pauses for (tools declared with
// prompt.NeedsApproval): Run calls decide for each call awaiting a
// decision, in call order, approves it when decide returns true and denies
// it with reason otherwise, and continues the run, as often as it pauses.
// The golden file shows the calls a step paused for (step N/awaiting), the
// decisions (step N decided/decisions) and the step's completion. Without
// Decide, Run stops at the first pause, which the snapshot ends with.
func Decide(decide func(call runtime.PendingApproval) (approve bool, reason string)) Option {
	return optionFunc(func(o *options) { o.decide = decide })
}

// runWithDecisions runs fn to its end, deciding the calls it pauses for
// with o.decide, and returns the steps of every part of the run.
func runWithDecisions(ctx context.Context, model llm.Model, fn prompt.Func, o *options) (*runtime.Result, error) {
	r := runtime.New(model, fn, o.cfg)
	defer r.Close() // a run left paused
	res, err := r.Run(ctx)
	for err == nil && len(res.Awaiting) > 0 && o.decide != nil {
		for _, a := range res.Awaiting {
			if ok, reason := o.decide(a); ok {
				err = r.Approve(a.CallID)
			} else {
				err = r.Deny(a.CallID, reason)
			}
			if err != nil {
				return res, err
			}
		}
		steps := res.Steps
		res, err = r.Run(ctx)
		res.Steps = append(steps, res.Steps...)
	}
	return res, err
}
