package prompt

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
)

// Enum is implemented by a type whose values form a closed set, such as
//
//	type Severity string
//
//	const (
//		Low  Severity = "low"
//		High Severity = "high"
//	)
//
//	func (Severity) Enum() []any { return []any{Low, High} }
//
// Wherever the type appears in a typed answer (DefOutput), a tool's
// arguments (DefTool) or a question's answer (Ask), its JSON Schema is an
// "enum" of those values (encoded as encoding/json writes them), so the
// model is told them and a value outside the set is refused: an answer is
// sent back to the model with the validation error, a tool call gets an
// error result, and Runner.Answer returns an error. A golden file shows the
// enum with the schema. The type's kind must be a string, an integer, a
// float or a bool, and Enum is called on its zero value.
type Enum interface {
	Enum() []any
}

var enumType = reflect.TypeFor[Enum]()

// schemaOptions returns the options that describe the enum types t uses
// (see Enum), or nil when it uses none.
func schemaOptions(t reflect.Type) (*jsonschema.ForOptions, error) {
	found := map[reflect.Type]*jsonschema.Schema{}
	if err := collectEnums(t, found, map[reflect.Type]bool{}); err != nil {
		return nil, err
	}
	if len(found) == 0 {
		return nil, nil
	}
	return &jsonschema.ForOptions{TypeSchemas: found}, nil
}

// collectEnums adds to found the schema of every enum type t is made of.
func collectEnums(t reflect.Type, found map[reflect.Type]*jsonschema.Schema, seen map[reflect.Type]bool) error {
	if seen[t] {
		return nil
	}
	seen[t] = true
	if t.Kind() == reflect.Pointer {
		return collectEnums(t.Elem(), found, seen)
	}
	if t.Implements(enumType) {
		s, err := enumSchema(t)
		if err != nil {
			return err
		}
		found[t] = s
		return nil
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return collectEnums(t.Elem(), found, seen)
	case reflect.Map:
		return collectEnums(t.Elem(), found, seen)
	case reflect.Struct:
		for _, f := range reflect.VisibleFields(t) {
			if f.IsExported() {
				if err := collectEnums(f.Type, found, seen); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// enumSchema is the schema of the enum type t: its JSON type and values.
func enumSchema(t reflect.Type) (*jsonschema.Schema, error) {
	var typ string
	switch t.Kind() {
	case reflect.String:
		typ = "string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		typ = "integer"
	case reflect.Float32, reflect.Float64:
		typ = "number"
	case reflect.Bool:
		typ = "boolean"
	default:
		return nil, fmt.Errorf("enum type %s: its kind is %s, not a string, a number or a bool", t, t.Kind())
	}
	vals := reflect.Zero(t).Interface().(Enum).Enum()
	if len(vals) == 0 {
		return nil, fmt.Errorf("enum type %s: Enum returns no value", t)
	}
	s := &jsonschema.Schema{Type: typ}
	for _, v := range vals {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("enum type %s: value %v: %w", t, v, err)
		}
		var jv any
		if err := json.Unmarshal(b, &jv); err != nil {
			return nil, fmt.Errorf("enum type %s: value %v: %w", t, v, err)
		}
		s.Enum = append(s.Enum, jv)
	}
	return s, nil
}
