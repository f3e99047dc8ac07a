package prompt

import (
	"encoding"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/big"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/reprompt/reprompt/defs"
)

// DefOutput declares that the run ends with a typed answer, a value of type
// T (a struct), instead of text: the model is asked for a JSON value
// matching T's JSON Schema (made as DefTool makes the schema of its
// arguments, then put in the strict form OpenAI's structured outputs take),
// the answer is validated when it arrives, and runtime.Output[T] decodes it
// from the run's result. How the model is asked — a response_format with
// the schema, or a final tool called name whose arguments are the answer —
// is the runtime's choice (runtime.Config.OutputMode); an invalid answer is
// sent back to the model with the validation error a bounded number of
// times (runtime.Config.OutputRetries).
//
// The output is a definition like the others: declared at every execution
// of the prompt function, it holds for that step only. A step whose
// execution did not declare it has no typed output, and a reply without
// tool calls ends the run with text as usual; so a prompt can let the model
// work with its tools first and declare the output once it should answer.
// One output per execution: a second DefOutput replaces the first.
//
// Strict form: every property of every object is required and no other is
// allowed; a field that is optional in Go (omitempty, omitzero, a pointer
// or a slice) admits null. Answers are validated against what T itself
// requires, so one that leaves out an omitempty field is valid too. A type
// strict mode cannot express — a map (its keys are free), an interface or
// json.RawMessage (any value), a []byte (base64 text in JSON), a type with
// its own MarshalJSON or MarshalText (but time.Time, slog.Level and the
// math/big numbers, described as the strings they are), a type that refers
// to itself, objects nested more than MaxOutputDepth deep, a type that is
// not a struct at the top — is an
// error naming the type and the field: DefOutput panics with a
// *MisuseError wrapping an *OutputTypeError (a run error naming the call
// site), as it does when name does not follow the rules of tool names.
func DefOutput[T any](p *Prompt, name, description string) {
	p.check("DefOutput")
	if !ValidToolName(name) {
		misuse("DefOutput", &ToolNameError{Name: name}, 1)
	}
	sch := outputSchemaFor(reflect.TypeFor[T]())
	if sch.err != nil {
		misuse("DefOutput "+name, sch.err, 1)
	}
	p.c().SetOutput(sch.declaration(name, description))
}

// declaration returns the definition of an output of this type named name:
// the last one made when it has the same name and description (a prompt
// declares its output again at every step).
func (sch *outputSchema) declaration(name, description string) *defs.Output {
	if d := sch.last.Load(); d != nil && d.Name == name && d.Description == description {
		return d
	}
	d := &defs.Output{Name: name, Description: description, Type: sch.typ, Schema: sch.raw, Validate: sch.validate}
	sch.last.Store(d)
	return d
}

// OutputTypeError is a type DefOutput cannot take: strict structured
// outputs cannot express it.
type OutputTypeError struct {
	// Type is the output type; Field the path of the offending field from
	// it, by Go field names ("Items[].Meta"), empty for the type itself.
	Type  string
	Field string
	// FieldType is the offending field's type, Reason what is wrong.
	FieldType string
	Reason    string
}

func (e *OutputTypeError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("output type %s: %s", e.Type, e.Reason)
	}
	return fmt.Sprintf("output type %s: field %s (%s): %s", e.Type, e.Field, e.FieldType, e.Reason)
}

// outputSchema is the strict schema made for one output type, cached for
// the life of the process.
type outputSchema struct {
	typ      string
	raw      json.RawMessage
	resolved *jsonschema.Resolved
	err      error
	last     atomic.Pointer[defs.Output] // the last declaration made
}

var outputSchemas sync.Map // reflect.Type → *outputSchema

func outputSchemaFor(t reflect.Type) *outputSchema {
	if v, ok := outputSchemas.Load(t); ok {
		return v.(*outputSchema)
	}
	sch := &outputSchema{typ: t.String()}
	sch.err = strictType(t, t.String(), "", 0, map[reflect.Type]bool{})
	if sch.err == nil {
		// Two schemas: the strict one the model gets, and the one answers are
		// validated against, where the fields Go takes as optional may be
		// left out (a model that is not held to the strict schema, or a
		// value encoded by encoding/json with omitempty, leaves them out).
		var sent, checked *jsonschema.Schema
		var opts *jsonschema.ForOptions
		if opts, sch.err = schemaOptions(t); sch.err != nil {
			sch.err = fmt.Errorf("cannot make a JSON Schema for output type %s: %w", t, sch.err)
			v, _ := outputSchemas.LoadOrStore(t, sch)
			return v.(*outputSchema)
		}
		if sent, sch.err = jsonschema.ForType(t, opts); sch.err == nil {
			checked, _ = jsonschema.ForType(t, opts)
			strictSchema(sent, true)
			strictSchema(checked, false)
			if sch.raw, sch.err = json.Marshal(sent); sch.err == nil {
				sch.resolved, sch.err = checked.Resolve(nil)
			}
		}
		if sch.err != nil {
			sch.err = fmt.Errorf("cannot make a JSON Schema for output type %s: %w", t, sch.err)
		}
	}
	v, _ := outputSchemas.LoadOrStore(t, sch)
	return v.(*outputSchema)
}

// validate checks an answer: valid JSON, matching the schema.
func (sch *outputSchema) validate(answer json.RawMessage) error {
	var v any
	if err := json.Unmarshal(answer, &v); err != nil {
		return fmt.Errorf("not valid JSON: %w", err)
	}
	return sch.resolved.Validate(v)
}

// MaxOutputDepth is how deep objects may nest in a typed answer: OpenAI's
// structured outputs take at most 10 levels.
const MaxOutputDepth = 10

// strictType reports the first part of t that strict structured outputs
// cannot express. top names the output type, path the field under way and
// depth the objects around it.
func strictType(t reflect.Type, top, path string, depth int, seen map[reflect.Type]bool) error {
	fail := func(reason string) error {
		return &OutputTypeError{Type: top, Field: path, FieldType: t.String(), Reason: reason}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if path == "" && t.Kind() != reflect.Struct {
		return fail("the output must be a struct (strict structured outputs take a JSON object at the top), not " + t.Kind().String())
	}
	if path == "" && (schemaAsString(t) || ownEncoding(t)) {
		return fail("the output must be a struct encoded as a JSON object (strict structured outputs take one at the top), not a type with its own JSON encoding")
	}
	if seen[t] {
		return fail("the type refers to itself, which a schema without $ref cannot express")
	}
	if t == reflect.TypeFor[json.RawMessage]() {
		return fail("json.RawMessage holds any JSON value, which strict structured outputs cannot express; use a concrete type")
	}
	if schemaAsString(t) {
		return nil // encoded as a string, and described as one
	}
	if ownEncoding(t) {
		return fail("the type has its own JSON encoding (MarshalJSON or MarshalText), which the schema made from its Go form may not describe; use a plain type")
	}
	switch t.Kind() {
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return fail("encoding/json writes a byte slice as base64 text, which the schema made for it (an array of numbers) does not describe; use a string")
		}
		return strictType(t.Elem(), top, path+"[]", depth, seen)
	case reflect.Map:
		return fail("a map has free keys, which strict structured outputs cannot express (every property must be named); use a slice of key/value structs")
	case reflect.Interface:
		return fail("an interface type has no schema (any JSON value), which strict structured outputs cannot express; use a concrete type")
	case reflect.Chan, reflect.Func, reflect.Complex64, reflect.Complex128, reflect.UnsafePointer:
		return fail("the type has no JSON form")
	case reflect.Array:
		return strictType(t.Elem(), top, path+"[]", depth, seen)
	case reflect.Struct:
		if depth++; depth > MaxOutputDepth {
			return fail(fmt.Sprintf("objects nest more than %d deep, more than strict structured outputs take", MaxOutputDepth))
		}
		seen[t] = true
		defer delete(seen, t)
		for _, f := range reflect.VisibleFields(t) {
			if f.Anonymous || !f.IsExported() {
				continue
			}
			if tag := f.Tag.Get("json"); tag == "-" {
				continue
			}
			sub := f.Name
			if path != "" {
				sub = path + "." + f.Name
			}
			if err := strictType(f.Type, top, sub, depth, seen); err != nil {
				return err
			}
		}
	}
	return nil
}

// schemaAsString reports the types with their own encoding that
// jsonschema-go describes as strings, as encoding/json writes them.
func schemaAsString(t reflect.Type) bool {
	switch t {
	case reflect.TypeFor[time.Time](), reflect.TypeFor[slog.Level](),
		reflect.TypeFor[big.Int](), reflect.TypeFor[big.Rat](), reflect.TypeFor[big.Float]():
		return true
	}
	return false
}

// ownEncoding reports whether t, or a pointer to it, has its own JSON
// encoding.
func ownEncoding(t reflect.Type) bool {
	for _, u := range []reflect.Type{t, reflect.PointerTo(t)} {
		if u.Implements(reflect.TypeFor[json.Marshaler]()) || u.Implements(reflect.TypeFor[encoding.TextMarshaler]()) {
			return true
		}
	}
	return false
}

// strictSchema puts s in the strict form: every property required (with
// requireAll; without it the required ones stay the same), those that were
// not admitting null; no additional properties.
func strictSchema(s *jsonschema.Schema, requireAll bool) {
	if s == nil {
		return
	}
	if s.Type == "object" || slices.Contains(s.Types, "object") {
		s.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}}
		names := s.PropertyOrder
		if len(names) == 0 {
			for n := range s.Properties {
				names = append(names, n)
			}
			slices.Sort(names)
		}
		for _, n := range names {
			if !slices.Contains(s.Required, n) {
				nullable(s.Properties[n])
			}
		}
		if requireAll {
			s.Required = slices.Clone(names)
		}
		if s.Properties == nil {
			s.Properties = map[string]*jsonschema.Schema{}
		}
	}
	for _, n := range s.PropertyOrder {
		strictSchema(s.Properties[n], requireAll)
	}
	strictSchema(s.Items, requireAll)
}

// nullable makes s admit null.
func nullable(s *jsonschema.Schema) {
	switch {
	case s == nil, slices.Contains(s.Types, "null"):
	case s.Type != "":
		s.Types, s.Type = []string{s.Type, "null"}, ""
	case len(s.Types) > 0:
		s.Types = append(s.Types, "null")
	}
	if s != nil && s.Enum != nil && !slices.Contains(s.Enum, nil) {
		s.Enum = append(s.Enum, nil) // an enum admits null only if it lists it
	}
}
