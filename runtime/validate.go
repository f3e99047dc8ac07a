package runtime

import (
	"fmt"
	"maps"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
)

// ValidateMessages checks that msgs is a conversation providers accept:
// every tool message answers a call of the assistant message before it (the
// tool messages of one assistant message directly following it, in any
// order), every tool call has exactly one result, call ids are not reused,
// and roles are known.
func ValidateMessages(msgs []defs.Message) error {
	var v validator
	if err := v.feed(msgs, 0, nil); err != nil {
		return err
	}
	return v.end(msgs, len(msgs), nil)
}

// validator checks a conversation message by message, so that a transcript
// that only grows is checked in time proportional to what is new.
type validator struct {
	n       int             // transcript messages checked so far
	open    int             // index of the assistant message whose calls are pending, or -1
	pending map[string]bool // call id → answered, for the open message
	seen    map[string]int  // call id → index of the message that made it
}

func (v *validator) reset() { *v = validator{} }

// overlay holds what checking a request's own tail adds, so that the
// transcript's validator is left as it was.
type overlay struct {
	open    int
	pending map[string]bool
	seen    map[string]int
}

// feed checks msgs[from:], continuing from the state after msgs[:from].
// With o set, changes go to o instead of v.
func (v *validator) feed(msgs []defs.Message, from int, o *overlay) error {
	if v.n == 0 && from == 0 && v.pending == nil {
		v.open = -1
		v.pending = map[string]bool{}
		v.seen = map[string]int{}
	}
	open, pending := &v.open, v.pending
	seenAt := func(id string) (int, bool) { i, ok := v.seen[id]; return i, ok }
	addSeen := func(id string, i int) { v.seen[id] = i }
	if o != nil {
		open, pending = &o.open, o.pending
		seenAt = func(id string) (int, bool) {
			if i, ok := o.seen[id]; ok {
				return i, true
			}
			i, ok := v.seen[id]
			return i, ok
		}
		addSeen = func(id string, i int) { o.seen[id] = i }
	}
	for i := from; i < len(msgs); i++ {
		m := &msgs[i]
		switch m.Role {
		case defs.RoleTool:
			if *open < 0 {
				return &llm.RequestError{Index: i, Reason: fmt.Sprintf("tool result for %q does not follow an assistant message with tool calls", m.ToolCallID)}
			}
			answered, ok := pending[m.ToolCallID]
			if !ok {
				return &llm.RequestError{Index: i, Reason: fmt.Sprintf("tool result for %q answers no call of message %d", m.ToolCallID, *open)}
			}
			if answered {
				return &llm.RequestError{Index: i, Reason: fmt.Sprintf("second tool result for call %q", m.ToolCallID)}
			}
			pending[m.ToolCallID] = true
		case defs.RoleAssistant, defs.RoleUser, defs.RoleSystem:
			if err := closeOpen(msgs, *open, pending, i); err != nil {
				return err
			}
			*open = -1
			if m.Role == defs.RoleAssistant && len(m.ToolCalls) > 0 {
				for _, c := range m.ToolCalls {
					if c.ID == "" {
						return &llm.RequestError{Index: i, Reason: fmt.Sprintf("tool call to %q has no id", c.Name)}
					}
					if j, dup := seenAt(c.ID); dup {
						return &llm.RequestError{Index: i, Reason: fmt.Sprintf("tool call id %q already used by message %d", c.ID, j)}
					}
					addSeen(c.ID, i)
					pending[c.ID] = false
				}
				*open = i
			}
		default:
			return &llm.RequestError{Index: i, Reason: fmt.Sprintf("unknown role %q", m.Role)}
		}
	}
	return nil
}

func closeOpen(msgs []defs.Message, open int, pending map[string]bool, at int) error {
	if err := answered(msgs, open, pending, at); err != nil {
		return err
	}
	clear(pending)
	return nil
}

// answered checks that every call of msgs[open] has its result.
func answered(msgs []defs.Message, open int, pending map[string]bool, at int) error {
	if open < 0 {
		return nil
	}
	for _, c := range msgs[open].ToolCalls {
		if !pending[c.ID] {
			return &llm.RequestError{Index: open, Reason: fmt.Sprintf("tool call %q (%s) has no result before message %d", c.ID, c.Name, at)}
		}
	}
	return nil
}

// end checks that no call is left without a result at the end of msgs.
func (v *validator) end(msgs []defs.Message, at int, o *overlay) error {
	if o != nil {
		return answered(msgs, o.open, o.pending, at)
	}
	return answered(msgs, v.open, v.pending, at)
}

// checkCommit checks msgs, which are to replace the transcript old, and
// reports whether v's state, that of old[:v.n], is also that of msgs[:v.n]:
// true when the two agree there in everything v looks at (roles, tool call
// ids and the ids results answer), as when an effect trims the content of
// old tool results. Then only msgs[v.n:] is examined, and v is left as it
// was; otherwise msgs is checked whole, as ValidateMessages does, and v
// must be reset. Either way the error is ValidateMessages'.
func (v *validator) checkCommit(old, msgs []defs.Message) (keep bool, err error) {
	k := v.n
	if k == 0 || v.pending == nil || k > len(msgs) || k > len(old) || !sameShape(old[:k], msgs[:k]) {
		return false, ValidateMessages(msgs)
	}
	o := &overlay{open: v.open, pending: maps.Clone(v.pending), seen: map[string]int{}}
	if err := v.feed(msgs, k, o); err != nil {
		return false, err
	}
	return true, v.end(msgs, len(msgs), o)
}

// sameShape reports whether a and b agree in what the validator examines.
func sameShape(a, b []defs.Message) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Role != y.Role || x.ToolCallID != y.ToolCallID || len(x.ToolCalls) != len(y.ToolCalls) {
			return false
		}
		for j := range x.ToolCalls {
			if x.ToolCalls[j].ID != y.ToolCalls[j].ID {
				return false
			}
		}
	}
	return true
}

// check checks a request whose first verbatim messages are the transcript
// (all of it, or none when an effect replaced the messages), feeding the
// transcript's new messages into v first. Only new messages and the
// request's own tail are examined.
func (v *validator) check(transcript, req []defs.Message, verbatim int) error {
	if err := v.feed(transcript, v.n, nil); err != nil {
		v.reset()
		return err
	}
	v.n = len(transcript)
	if verbatim < len(transcript) {
		return ValidateMessages(req)
	}
	if verbatim == len(req) {
		return v.end(req, len(req), nil)
	}
	o := &overlay{open: v.open, pending: maps.Clone(v.pending), seen: map[string]int{}}
	if err := v.feed(req, verbatim, o); err != nil {
		return err
	}
	return v.end(req, len(req), o)
}
