package core

import (
	"encoding/json"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/google/jsonschema-go/jsonschema"
)

// Schema is the JSON Schema of a tool's arguments, generated for one Go
// type or given as is, cached for the life of the process: a prompt
// re-declares its tools at every step. Package prompt makes and validates
// against it; a prompt's ToolEntry keeps the one its tool was made with.
type Schema struct {
	Raw      json.RawMessage
	Resolved *jsonschema.Resolved
	Err      error
	NoFields bool // the argument type is a struct without fields
	// valid holds the last arguments that validated: a model often calls a
	// tool with the same arguments ("{}" for a tool without any), and
	// validating them again is the costliest part of a call.
	valid atomic.Pointer[string]
	// validators holds the Validate function of each tool name using the
	// schema, made once rather than at every declaration. The map is never
	// changed once stored (a new name stores a copy), so that the lookup
	// every declaration makes takes no lock: schemas are shared by every
	// prompt of the process.
	mu         sync.Mutex // serialises the stores
	validators atomic.Pointer[map[string]func(json.RawMessage) error]
}

// Validator returns the Validate function of the tool name, made by make
// the first time the name asks.
func (s *Schema) Validator(name string, make func() func(json.RawMessage) error) func(json.RawMessage) error {
	if m := s.validators.Load(); m != nil {
		if f := (*m)[name]; f != nil {
			return f
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.validators.Load()
	if old != nil {
		if f := (*old)[name]; f != nil {
			return f
		}
	}
	m := map[string]func(json.RawMessage) error{}
	if old != nil {
		m = maps.Clone(*old)
	}
	f := make()
	m[name] = f
	s.validators.Store(&m)
	return f
}

// Known reports whether raw (non-empty) are the last arguments that
// validated against s.
func (s *Schema) Known(raw string) bool {
	last := s.valid.Load()
	return last != nil && *last == raw
}

// MarkValid records raw as the last arguments that validated.
func (s *Schema) MarkValid(raw string) { s.valid.Store(&raw) }
