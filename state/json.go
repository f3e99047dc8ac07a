package state

import (
	"context"
	"encoding/json"
	"fmt"
)

// SetJSON stores the JSON value raw under key, whatever the key held
// before; a typed read decodes it, as it decodes values restored from a
// checkpoint. It is how state changes made elsewhere (a tool call run in
// another process) are applied. When ctx carries a transaction of s, it
// records the change in the transaction instead. It returns an error,
// naming the key, when raw is not valid JSON, and a *ContextError as Set
// does.
func SetJSON(ctx context.Context, s *Store, key string, raw json.RawMessage) error {
	if !json.Valid(raw) {
		return fmt.Errorf("state %q: the value is not valid JSON", key)
	}
	tx, err := s.target(ctx, "SetJSON", key)
	if err != nil {
		return err
	}
	e := &entry{raw: append(json.RawMessage(nil), raw...)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if tx != nil {
		tx.record(key, func(*entry) (*entry, error) { return e, nil }, nil, e)
		return nil
	}
	s.vals[key] = e
	s.version++
	return nil
}

// Changes returns the values, as JSON, of the keys whose JSON in s differs
// from their JSON in the object before (the form MarshalJSON writes), or
// that before does not hold. It fails, naming the key, when a value cannot
// be encoded. Keys cannot be deleted from a store, so none is reported as
// removed.
func (s *Store) Changes(before json.RawMessage) (map[string]json.RawMessage, error) {
	var old map[string]json.RawMessage
	if len(before) > 0 {
		if err := json.Unmarshal(before, &old); err != nil {
			return nil, fmt.Errorf("the state before the changes: %w", err)
		}
	}
	now, err := s.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var cur map[string]json.RawMessage
	if err := json.Unmarshal(now, &cur); err != nil {
		return nil, fmt.Errorf("the state after the changes: %w", err)
	}
	var out map[string]json.RawMessage
	for k, v := range cur {
		if o, ok := old[k]; ok && string(o) == string(v) {
			continue
		}
		if out == nil {
			out = make(map[string]json.RawMessage)
		}
		out[k] = v
	}
	return out, nil
}
