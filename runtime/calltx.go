package runtime

import (
	"context"
	"encoding/json"

	"github.com/reprompt/reprompt/state"
)

// outerTx is the transaction of a call of a parent agent that runs a
// sub-agent (a DefAgent tool), and those of the calls above it.
//
// A sub-agent's prompt function may close over its parent's setters, so its
// tools may change the parent's state. Those changes belong to the parent's
// call that runs the sub-agent: they must be recorded in that call's
// transaction, applied in call order with its other changes. The tools of
// a sub-agent run on goroutines of their own, where the parent's store
// cannot tell which of the parent's calls they belong to, so each runs
// under the transactions of the calls above it too (see withOuter).
type outerTx struct {
	tx *state.Tx
	up *outerTx
}

type outerTxKey struct{}

// withOuterTx returns ctx carrying tx, the transaction of the call of r
// that ctx belongs to, for the sub-agent the call runs (see RunAgent).
func (r *Runner) withOuterTx(ctx context.Context, tx *state.Tx) context.Context {
	if tx == nil {
		return ctx
	}
	return context.WithValue(ctx, outerTxKey{}, &outerTx{tx: tx, up: r.outer})
}

// outerTxOf returns the transactions ctx carries (see withOuterTx), or nil.
func outerTxOf(ctx context.Context) *outerTx {
	o, _ := ctx.Value(outerTxKey{}).(*outerTx)
	return o
}

// withOuter returns f run under the transactions of o and of those above
// it: the changes f makes to the store of an agent above are recorded in
// the transaction of that agent's call.
func withOuter(f func(context.Context, json.RawMessage) (string, error), o *outerTx) func(context.Context, json.RawMessage) (string, error) {
	for ; o != nil; o = o.up {
		inner, tx := f, o.tx
		f = func(ctx context.Context, args json.RawMessage) (string, error) { return tx.Run(inner, ctx, args) }
	}
	return f
}
