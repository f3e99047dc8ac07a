package runtime

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/session"
)

// RetiredCallIDsKey is the key of session.Checkpoint.Extra under which
// checkpoints saved before session.Checkpoint.RetiredCallIDs existed kept
// the ids of the tool calls that commits (compaction) took out of the
// transcript, as a JSON array of strings, sorted. A resumed run reads them
// there and in RetiredCallIDs, so that a call id the model reuses gets the
// suffix it gets in an uninterrupted run (see uniqueCallIDs) instead of
// the id of a call made before the commit: prompt.CallID stays an
// idempotency key across Resume. The runtime now keeps them in
// RetiredCallIDs, in the order they were retired, which a store writes
// only once: rewriting the whole set into every checkpoint made a save
// cost the length of the session.
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
			r.addRetired(c.ID)
		}
	}
}

// addRetired adds id to the retired call ids, unless it is one.
func (r *Runner) addRetired(id string) {
	if _, ok := r.retired[id]; ok {
		return
	}
	if r.retired == nil {
		r.retired = make(map[string]struct{})
	}
	r.retired[id] = struct{}{}
	r.retiredList = append(r.retiredList, id)
}

// restoreRetired reads the retired call ids of cp: those of checkpoints
// saved before RetiredCallIDs existed (under RetiredCallIDsKey), then
// RetiredCallIDs.
func (r *Runner) restoreRetired(cp *session.Checkpoint) error {
	r.retired, r.retiredList = nil, nil
	if raw, ok := cp.Extra[RetiredCallIDsKey]; ok {
		var ids []string
		if err := json.Unmarshal(raw, &ids); err != nil {
			return fmt.Errorf("extra %q: %w", RetiredCallIDsKey, err)
		}
		for _, id := range ids {
			r.addRetired(id)
		}
	}
	for _, id := range cp.RetiredCallIDs {
		r.addRetired(id)
	}
	return nil
}

// uniqueCallIDs gives every tool call of m an id used by no other call of
// the run, before the reply enters the transcript or a checkpoint: some
// servers send calls without ids, repeat an id within one reply, or reuse
// "call_0" on every turn, and a conversation with such ids would fail
// validation at the next step, and at every Resume. A missing id becomes
// "call_<step>_<index>"; a repeated one gets a suffix "_2", "_3"… The
// calls are copied before they are changed: the model's reply may be
// shared.
func (r *Runner) uniqueCallIDs(m *defs.Message, step int) {
	if len(m.ToolCalls) == 0 {
		return
	}
	// The ids used so far: those of the transcript, which the validator
	// holds for the messages it has read (all of them once the request
	// was checked), those commits took out of it, and those of m's calls
	// before the one at hand.
	read := r.valid.n
	copied := false
	taken := func(id string, i int) bool {
		if _, ok := r.valid.seen[id]; ok {
			return true
		}
		if _, ok := r.retired[id]; ok {
			return true
		}
		for _, msg := range r.transcript[read:] {
			for _, c := range msg.ToolCalls {
				if c.ID == id {
					return true
				}
			}
		}
		for _, c := range m.ToolCalls[:i] {
			if c.ID == id {
				return true
			}
		}
		return false
	}
	for i, c := range m.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", step, i)
		}
		for k := 2; taken(id, i); k++ {
			id = fmt.Sprintf("%s_%d", cmp.Or(c.ID, fmt.Sprintf("call_%d_%d", step, i)), k)
		}
		if id != c.ID {
			if !copied {
				m.ToolCalls, copied = slices.Clone(m.ToolCalls), true
			}
			m.ToolCalls[i].ID = id
		}
	}
}
