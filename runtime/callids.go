package runtime

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/session"
)

// RetiredCallIDsKey is the key of session.Checkpoint.Extra under which the
// runtime keeps the ids of the tool calls that commits (compaction) took
// out of the transcript, as a JSON array of strings, sorted. A resumed run
// reads them so that a call id the model reuses gets the suffix it gets in
// an uninterrupted run (see uniqueCallIDs) instead of the id of a call made
// before the commit: prompt.CallID stays an idempotency key across Resume.
// A checkpoint without the key has none.
const RetiredCallIDsKey = "runtime.retired_call_ids"

// retire records as retired the call ids of gone, the messages a commit
// replaces, that kept, the messages that replace them, does not hold.
func (r *Runner) retire(gone, kept []defs.Message) {
	var in map[string]struct{} // the call ids of kept, made at the first call of gone
	for _, m := range gone {
		for _, c := range m.ToolCalls {
			if in == nil {
				in = make(map[string]struct{})
				for _, k := range kept {
					for _, kc := range k.ToolCalls {
						in[kc.ID] = struct{}{}
					}
				}
			}
			if _, ok := in[c.ID]; ok {
				continue
			}
			if _, ok := r.retired[c.ID]; ok {
				continue
			}
			if r.retired == nil {
				r.retired = make(map[string]struct{})
			}
			r.retired[c.ID] = struct{}{}
			r.retiredJSON = nil
		}
	}
}

// retiredExtra returns the Extra of a checkpoint: the retired call ids
// (encoded once for every change), or nil when there are none.
func (r *Runner) retiredExtra() (map[string]json.RawMessage, error) {
	if len(r.retired) == 0 {
		return nil, nil
	}
	if r.retiredJSON == nil {
		ids := make([]string, 0, len(r.retired))
		for id := range r.retired {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		b, err := json.Marshal(ids)
		if err != nil {
			return nil, err
		}
		r.retiredJSON = b
	}
	return map[string]json.RawMessage{RetiredCallIDsKey: r.retiredJSON}, nil
}

// restoreRetired reads the retired call ids of cp.
func (r *Runner) restoreRetired(cp *session.Checkpoint) error {
	raw, ok := cp.Extra[RetiredCallIDsKey]
	if !ok {
		return nil
	}
	var ids []string
	if err := json.Unmarshal(raw, &ids); err != nil {
		return fmt.Errorf("extra %q: %w", RetiredCallIDsKey, err)
	}
	r.retired = make(map[string]struct{}, len(ids))
	for _, id := range ids {
		r.retired[id] = struct{}{}
	}
	r.retiredJSON = nil
	return nil
}
