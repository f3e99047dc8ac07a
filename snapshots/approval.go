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
	turns := o.turns
	var res *runtime.Result
	var err error
	if len(turns) > 0 {
		res, err = r.Continue(ctx, turns[0]) // the first turn's message
		turns = turns[1:]
	} else {
		res, err = r.Run(ctx)
	}
	res, err = decideAll(ctx, r, res, err, o)
	for _, msg := range turns {
		if err != nil {
			break
		}
		steps := res.Steps
		res, err = r.Continue(ctx, msg)
		res, err = decideAll(ctx, r, res, err, o)
		if res != nil {
			res.Steps = append(steps, res.Steps...)
		}
	}
	return res, err
}

// decideAll decides, with o's Decide function, every call the run pauses
// for, until it ends.
func decideAll(ctx context.Context, r *runtime.Runner, res *runtime.Result, err error, o *options) (*runtime.Result, error) {
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
